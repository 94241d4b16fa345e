/*
 * fuzz_config.c — libFuzzer target for the configuration loader
 * (config_load_text): any text either loads into a configuration whose
 * documented ranges hold, or fails with a message; never a crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    config cfg;
    error_info err;
    if (config_init_defaults(&cfg, &err) != ERR_OK)
        abort();
    error_code rc = config_load_text(&cfg, (const char *)data, size, "fuzz.json", &err);
    if (rc == ERR_OK) {
        if (cfg.report.page_size < 1 || cfg.report.page_size > 1000 || cfg.installer.keep_versions < 1 ||
            !cfg.state_dir)
            abort();
        error_info api_err;
        (void)config_check_api(&cfg, &api_err);
    } else if (err.message[0] == '\0') {
        abort();
    }
    config_free(&cfg);
    return 0;
}
