/* test_config.c — configuration loading: defaults, every validation error
 * names its key, durations, base_url rules, the API key sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/dynbuf.h"
#include "core/config.h"

#include "support.h"

static error_code load(const char *json, config *cfg, error_info *err)
{
    assert_int_equal(config_init_defaults(cfg, err), ERR_OK);
    return config_load_text(cfg, json, strlen(json), "test.json", err);
}

static void test_defaults(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    assert_int_equal(load("{}", &cfg, &err), ERR_OK);
    assert_null(cfg.base_url);
    assert_string_equal(cfg.state_dir, "/var/lib/outpost");
    assert_string_equal(cfg.installer.platform, "windows");
    assert_int_equal(cfg.installer.keep_versions, 2);
    assert_true(cfg.installer.verify.require_signature);
    assert_false(cfg.installer.verify.require_version_match);
    assert_false(cfg.deploy.enabled);
    assert_true(cfg.installer.enabled);
    assert_null(cfg.deploy.command); /* the default follows the staged format */
    assert_int_equal(cfg.deploy.command_count, 0);
    assert_int_equal(cfg.deploy.pe_args_count, 2);
    assert_string_equal(cfg.deploy.pe_args[0], "/quiet");
    assert_string_equal(cfg.deploy.pe_args[1], "/norestart");
    assert_null(cfg.deploy.pe_args[2]);
    assert_false(cfg.deploy.pass_reboot_code);
    assert_int_equal(cfg.deploy.timeout_s, 1800);
    assert_true(cfg.report.enabled);
    assert_int_equal(cfg.report.initial_lookback_s, 24 * 3600);
    assert_int_equal(cfg.report.page_size, 1000);
    assert_int_equal(cfg.report.keep_incidents, 200);
    assert_int_equal(cfg.report.jsonl_max_bytes, 64 * 1024 * 1024);
    assert_string_equal(cfg.report.status_file, "status.json");
    assert_int_equal(cfg.jitter_s, 0);
    assert_int_equal(cfg.http.low_speed_time_s, 60);
    assert_int_equal(cfg.http.min_speed, 1024);
    assert_int_equal(cfg.http.transfer_timeout_s, 600);
    assert_null(cfg.log.file);
    assert_int_equal(cfg.log.max_bytes, 1048576);
    assert_int_equal(cfg.log.keep, 3);
    config_free(&cfg);
}

static void test_full_example(void **state)
{
    (void)state;
    const char *json =
        "{\"base_url\": \"https://tenant.example.com/public/\", \"api_key_file\": \"/etc/outpost/api_key\","
        " \"state_dir\": \"/tmp/x\", \"tls\": {\"ca_file\": null, \"pinned_public_key\": \"sha256//abc=\"},"
        " \"proxy\": \"http://proxy:3128\","
        " \"installer\": {\"platform\": \"windows\", \"installed_version\": \"24.3.0\", \"installed_version_file\": "
        "null,"
        "   \"keep_versions\": 3, \"verify\": {\"require_signature\": false, \"trusted_ca_file\": \"/ca.pem\","
        "   \"signer_subject\": \"Example\", \"require_version_match\": true, \"expected_sha256\": "
        "\"ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789\"}},"
        " \"deploy\": {\"enabled\": true, \"command\": [\"/bin/true\", \"{installer}\"], \"timeout_s\": 60},"
        " \"report\": {\"enabled\": true, \"initial_lookback\": \"15m\", \"filter\": {\"created_by\": [\"policy\"]},"
        "   \"page_size\": 500, \"keep_incidents\": 10, \"status_file\": \"s.json\", \"jsonl_file\": \"i.jsonl\"},"
        " \"schedule\": {\"jitter\": \"30s\"}}";
    config cfg;
    error_info err;
    assert_int_equal(load(json, &cfg, &err), ERR_OK);
    assert_string_equal(cfg.base_url, "https://tenant.example.com/public");
    assert_string_equal(cfg.tls_pinned_public_key, "sha256//abc=");
    assert_null(cfg.tls_ca_file);
    assert_int_equal(cfg.installer.keep_versions, 3);
    assert_false(cfg.installer.verify.require_signature);
    assert_true(cfg.installer.verify.require_version_match);
    assert_string_equal(cfg.installer.verify.expected_sha256,
                        "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
    assert_int_equal(cfg.deploy.command_count, 2);
    assert_string_equal(cfg.deploy.command[0], "/bin/true");
    assert_null(cfg.deploy.command[2]);
    assert_int_equal(cfg.report.initial_lookback_s, 900);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(cfg.report.filter, "created_by")));
    assert_int_equal(cfg.report.page_size, 500);
    assert_int_equal(cfg.jitter_s, 30);
    config_free(&cfg);
}

/* Each bad input must fail with ERR_CONFIG and name the offending key. */
static void test_errors_name_the_key(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *must_mention;
    } cases[] = {
        {"{\"bogus\": 1}", "`bogus`"},
        {"{\"report\": {\"pagesize\": 10}}", "`report.pagesize`"},
        {"{\"installer\": {\"verify\": {\"require_sig\": true}}}", "`installer.verify.require_sig`"},
        {"{\"report\": {\"page_size\": 0}}", "`report.page_size`"},
        {"{\"report\": {\"page_size\": 1001}}", "`report.page_size`"},
        {"{\"report\": {\"page_size\": 10.5}}", "`report.page_size`"},
        {"{\"report\": {\"page_size\": \"10\"}}", "`report.page_size`"},
        {"{\"installer\": {\"keep_versions\": 0}}", "`installer.keep_versions`"},
        {"{\"report\": {\"initial_lookback\": \"24\"}}", "`report.initial_lookback`"},
        {"{\"report\": {\"initial_lookback\": \"1w\"}}", "`report.initial_lookback`"},
        {"{\"report\": {\"initial_lookback\": 24}}", "`report.initial_lookback`"},
        {"{\"schedule\": {\"jitter\": \"-5s\"}}", "`schedule.jitter`"},
        {"{\"http\": {\"min_speed\": 0}}", "`http.min_speed`"},
        {"{\"http\": {\"min_speed\": \"1k\"}}", "`http.min_speed`"},
        {"{\"http\": {\"transfer_timeout\": \"0s\"}}", "`http.transfer_timeout`"},
        {"{\"http\": {\"transfer_timeout\": 600}}", "`http.transfer_timeout`"},
        {"{\"http\": {\"transfer_timout\": \"10m\"}}", "`http.transfer_timout`"},
        {"{\"schedule\": {\"jitter\": \"5 s\"}}", "`schedule.jitter`"},
        {"{\"state_dir\": null}", "`state_dir`"},
        {"{\"state_dir\": \"\"}", "`state_dir`"},
        {"{\"tls\": []}", "`tls`"},
        {"{\"deploy\": {\"enabled\": \"yes\"}}", "`deploy.enabled`"},
        {"{\"deploy\": {\"command\": []}}", "`deploy.command`"},
        {"{\"deploy\": {\"command\": \"msiexec /i\"}}", "`deploy.command`"},
        {"{\"deploy\": {\"command\": [\"x\", 3]}}", "`deploy.command[1]`"},
        {"{\"report\": {\"filter\": []}}", "`report.filter`"},
        {"{\"installer\": {\"verify\": {\"expected_sha256\": \"abc\"}}}", "`installer.verify.expected_sha256`"},
        {"{\"installer\": {\"verify\": {\"require_version_match\": \"yes\"}}}",
         "`installer.verify.require_version_match`"},
        {"{\"base_url\": \"http://tenant.example.com\"}", "`base_url`"},
        {"{\"base_url\": \"ftp://tenant.example.com\"}", "`base_url`"},
        {"{\"base_url\": \"http://127.0.0.1.evil.com\"}", "`base_url`"},
        {"{\"base_url\": \"http://localhost@evil.com\"}", "`base_url`"},
        {"{\"mirror\": {\"urls\": \"https://m.example\"}}", "`mirror.urls`"},
        {"{\"mirror\": {\"urls\": [\"ftp://m.example\"]}}", "`mirror.urls[0]`"},
        {"{\"mirror\": {\"urls\": [\"https://m.example\", \"\"]}}", "`mirror.urls[1]`"},
        {"{\"mirror\": {\"public_keys\": [3]}}", "`mirror.public_keys[0]`"},
        {"{\"mirror\": {\"channel\": \"\"}}", "`mirror.channel`"},
        {"{\"mirror\": {\"machine\": \"x\"}}", "`mirror.machine`"},
        {"{\"publish\": {\"rollout_percent\": 100.5}}", "`publish.rollout_percent`"},
        {"{\"publish\": {\"rollout_percent\": \"50\"}}", "`publish.rollout_percent`"},
        {"{\"publish\": {\"keep_installers\": 0}}", "`publish.keep_installers`"},
        {"{\"publish\": {\"expires\": \"14x\"}}", "`publish.expires`"},
        {"{\"publish\": {\"expires\": \"1s\"}}", "`publish.expires`"},
        {"{\"publish\": {\"signing_key\": \"k.pem\"}}", "`publish.signing_key`"},
        {"{\"log\": {\"max_bytes\": 100}}", "`log.max_bytes` must be a whole number from 4096 to 1073741824"},
        {"{\"log\": {\"max_bytes\": 2000000000000}}", "`log.max_bytes`"},
        {"{\"log\": {\"keep\": 0}}", "`log.keep` must be a whole number from 1 to 100"},
        {"{\"log\": {\"keep\": 101}}", "`log.keep`"},
        {"{\"log\": {\"file\": \"\"}}", "`log.file`"},
        {"{\"log\": {\"file\": 3}}", "`log.file`"},
        {"{\"log\": {\"path\": \"x\"}}", "`log.path`"},
        {"{\"proxy_auth\": \"kerberos\"}", "`proxy_auth` must be \"auto\", \"negotiate\", \"ntlm\""},
        {"{\"proxy_auth\": null}", "`proxy_auth`"},
        {"{\"proxy_auth\": 1}", "`proxy_auth`"},
        {"{\"proxy_keytab\": 3}", "`proxy_keytab`"},
        {"{\"proxy_keytab\": \"\"}", "`proxy_keytab`"},
        {"{\"proxy\": \"ftp://proxy:21\"}", "`proxy` must be \"system\""},
        {"{\"proxy\": \"wpad\\/x\"}", "`proxy`"},
        {"{\"proxy\": 3128}", "`proxy`"},
        {"[1, 2]", "JSON object"},
        {"{\"base_url\": ", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        config cfg;
        error_info err;
        error_code rc = load(cases[i].json, &cfg, &err);
        if (rc != ERR_CONFIG || !strstr(err.message, cases[i].must_mention))
            fail_msg("case %zu (%s): rc=%d message=\"%s\"", i, cases[i].json, rc, err.message);
        assert_non_null(strstr(err.message, "test.json"));
        config_free(&cfg);
    }
}

/* proxy: "system" (the default, also null), "direct", a URL or host:port;
 * proxy_auth by name; a refused proxy URL is shown without its password. */
static void test_proxy_keys(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    assert_int_equal(load("{}", &cfg, &err), ERR_OK);
    assert_int_equal(cfg.proxy_auth, CONFIG_PROXY_AUTH_AUTO);
    assert_null(cfg.proxy_keytab);
    config_free(&cfg);
    static const char *const good[] = {
        "\"system\"",           "\"direct\"",       "null", "\"http://u:p@proxy:3128\"", "\"proxy.corp:8080\"",
        "\"socks5h://s:1080\"", "\"HTTPS://p:443\""};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char json[200];
        snprintf(json, sizeof json, "{\"proxy\": %s, \"proxy_auth\": \"ntlm\", \"proxy_keytab\": \"/etc/krb5.keytab\"}",
                 good[i]);
        if (load(json, &cfg, &err) != ERR_OK)
            fail_msg("%s: %s", json, err.message);
        assert_int_equal(cfg.proxy_auth, CONFIG_PROXY_AUTH_NTLM);
        assert_string_equal(cfg.proxy_keytab, "/etc/krb5.keytab");
        config_free(&cfg);
    }
    assert_int_equal(load("{\"proxy\": \"ftp://user:Secr3t@proxy:21\"}", &cfg, &err), ERR_CONFIG);
    assert_null(strstr(err.message, "Secr3t"));
    config_free(&cfg);
}

static void test_loopback_http_allowed(void **state)
{
    (void)state;
    static const char *const ok[] = {"http://127.0.0.1:8080", "http://localhost",      "http://[::1]:9/x",
                                     "http://127.1.2.3/",     "HTTPS://t.example.com", "http://LOCALHOST:1"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"base_url\": \"%s\"}", ok[i]);
        config cfg;
        error_info err;
        if (load(json, &cfg, &err) != ERR_OK)
            fail_msg("%s refused: %s", ok[i], err.message);
        config_free(&cfg);
    }
}

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t seconds; /* -1: invalid */
    } cases[] = {{"0s", 0},
                 {"30s", 30},
                 {"15m", 900},
                 {"24h", 86400},
                 {"14d", 14 * 86400},
                 {"", -1},
                 {"1w", -1},
                 {"s", -1},
                 {"10", -1},
                 {"1.5h", -1},
                 {"10ms", -1},
                 {"+5s", -1},
                 {"99999999999999999999h", -1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t s = -1;
        error_info err;
        error_code rc = config_parse_duration(cases[i].text, &s, &err);
        if (cases[i].seconds < 0)
            assert_int_equal(rc, ERR_CONFIG);
        else {
            assert_int_equal(rc, ERR_OK);
            assert_int_equal(s, cases[i].seconds);
        }
    }
}

/* The mirror and publish sections (PRODUCT.md section 2): defaults and a full example. */
static void test_mirror_and_publish(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    assert_int_equal(load("{}", &cfg, &err), ERR_OK);
    assert_int_equal(cfg.mirror.url_count, 0);
    assert_int_equal(cfg.mirror.public_key_count, 0);
    assert_string_equal(cfg.mirror.channel, "stable");
    assert_null(cfg.mirror.machine_id);
    assert_null(cfg.publish.dir);
    assert_null(cfg.publish.signing_key_file);
    assert_string_equal(cfg.publish.channel, "stable");
    assert_int_equal(cfg.publish.expires_s, 14 * 86400);
    assert_true(cfg.publish.rollout_percent == 100);
    assert_int_equal(cfg.publish.keep_installers, 3);
    config_free(&cfg);

    assert_int_equal(
        load("{\"mirror\": {\"urls\": [\"https://m.example/outpost/\", \"http://10.0.0.5/m\", "
             "\"file:///mnt/share/outpost\"], \"public_keys\": [\"/etc/outpost/mirror.pub\"], "
             "\"channel\": \"beta\", \"machine_id\": \"host-17\", \"root_file\": \"/etc/outpost/root.json\"}, "
             "\"publish\": {\"dir\": \"/srv/mirror\", \"signing_key_file\": \"/etc/outpost/mirror.key\", "
             "\"roots_dir\": \"/etc/outpost/roots\", "
             "\"channel\": \"beta\", \"expires\": \"7d\", \"rollout_percent\": 12.5, \"keep_installers\": 5}}",
             &cfg, &err),
        ERR_OK);
    assert_int_equal(cfg.mirror.url_count, 3);
    assert_string_equal(cfg.mirror.urls[2], "file:///mnt/share/outpost");
    assert_int_equal(cfg.mirror.public_key_count, 1);
    assert_string_equal(cfg.mirror.public_keys[0], "/etc/outpost/mirror.pub");
    assert_string_equal(cfg.mirror.channel, "beta");
    assert_string_equal(cfg.mirror.machine_id, "host-17");
    assert_string_equal(cfg.mirror.root_file, "/etc/outpost/root.json");
    assert_string_equal(cfg.publish.roots_dir, "/etc/outpost/roots");
    assert_string_equal(cfg.publish.dir, "/srv/mirror");
    assert_int_equal(cfg.publish.expires_s, 7 * 86400);
    assert_true(cfg.publish.rollout_percent == 12.5);
    assert_int_equal(cfg.publish.keep_installers, 5);
    config_free(&cfg);
}

static void test_check_api_needs_base_url(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    assert_int_equal(load("{}", &cfg, &err), ERR_OK);
    assert_int_equal(config_check_api(&cfg, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "base_url"));
    config_free(&cfg);
}

static char *write_temp(const char *content, mode_t mode)
{
    char *path = strdup("/tmp/outpost-test-key-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    chmod(path, mode);
    return path;
}

static void test_api_key_sources(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    char *key = NULL;
    unsetenv("OUTPOST_API_KEY");
    assert_int_equal(load("{}", &cfg, &err), ERR_OK);
    assert_int_equal(config_load_api_key(&cfg, &key, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "OUTPOST_API_KEY"));

    char *good = write_temp("  secret-key-1\n", 0600);
    cfg.api_key_file = strdup(good);
    assert_int_equal(config_load_api_key(&cfg, &key, &err), ERR_OK);
    assert_string_equal(key, "secret-key-1");
    dynbuf_secret_free(key);

    chmod(good, 0640);
    assert_int_equal(config_load_api_key(&cfg, &key, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, good));
    assert_null(strstr(err.message, "secret-key-1"));

    setenv("OUTPOST_API_KEY", "from-env", 1);
    assert_int_equal(config_load_api_key(&cfg, &key, &err), ERR_OK);
    assert_string_equal(key, "from-env");
    dynbuf_secret_free(key);
    unsetenv("OUTPOST_API_KEY");

    char *empty = write_temp("\n \n", 0600);
    free(cfg.api_key_file);
    cfg.api_key_file = strdup(empty);
    assert_int_equal(config_load_api_key(&cfg, &key, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "empty"));

    unlink(good);
    unlink(empty);
    free(good);
    free(empty);
    config_free(&cfg);
}

/* Every file the configuration names must exist when the command that
 * reads it starts (PRODUCT.md section 2): ERR_CONFIG, one line naming the
 * key and the path. Loading alone never looks (a report-only machine has no
 * publisher CA). */
static void test_named_files_must_exist(void **state)
{
    (void)state;
    char *dir = support_tempdir("config-files");
    char present[600], missing[600], link_ok[600], link_dangling[600];
    snprintf(present, sizeof present, "%s/ca.pem", dir);
    snprintf(missing, sizeof missing, "%s/missing.pem", dir);
    snprintf(link_ok, sizeof link_ok, "%s/link.pem", dir);
    snprintf(link_dangling, sizeof link_dangling, "%s/dangling.pem", dir);
    FILE *f = fopen(present, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
    assert_int_equal(symlink(present, link_ok), 0);
    assert_int_equal(symlink(missing, link_dangling), 0);

    static const char *const keys[] = {"installer.verify.trusted_ca_file", "tls.ca_file", "api_key_file"};
    const struct {
        const char *path;
        error_code want;
        const char *says;
    } cases[] = {
        {NULL, ERR_OK, NULL},
        {present, ERR_OK, NULL},
        {link_ok, ERR_OK, NULL},
        {missing, ERR_CONFIG, "does not exist"},
        {link_dangling, ERR_CONFIG, "does not exist"},
        {dir, ERR_CONFIG, "is a directory"},
    };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            error_info err;
            error_clear(&err);
            assert_int_equal(config_check_file(keys[k], cases[i].path, &err), cases[i].want);
            if (cases[i].want == ERR_OK)
                continue;
            char line[2048];
            snprintf(line, sizeof line, "%s: %s %s", keys[k], cases[i].path, cases[i].says);
            if (strncmp(err.message, line, strlen(line)) != 0)
                fail_msg("got \"%s\", want it to start with \"%s\"", err.message, line);
            assert_null(strchr(err.message, '\n'));
        }
    }

    /* Loading does not look; the commands' checks do. */
    config cfg;
    error_info err;
    char json[4096];
    snprintf(json, sizeof json,
             "{\"base_url\": \"https://t.example.com\", \"tls\": {\"ca_file\": \"%s\"},"
             " \"installer\": {\"verify\": {\"trusted_ca_file\": \"%s\", \"timestamp_ca_file\": \"%s\"}}}",
             missing, missing, present);
    assert_int_equal(load(json, &cfg, &err), ERR_OK);
    assert_int_equal(config_check_api(&cfg, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "tls.ca_file: "));
    assert_int_equal(config_check_verify_files(&cfg.installer.verify, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "installer.verify.trusted_ca_file: "));
    free(cfg.installer.verify.trusted_ca_file);
    cfg.installer.verify.trusted_ca_file = NULL;
    free(cfg.installer.verify.timestamp_ca_file);
    cfg.installer.verify.timestamp_ca_file = strdup(missing);
    assert_int_equal(config_check_verify_files(&cfg.installer.verify, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "installer.verify.timestamp_ca_file: "));

    /* tls.pinned_public_key is a file unless it is libcurl's sha256// form. */
    free(cfg.tls_ca_file);
    cfg.tls_ca_file = strdup(present);
    cfg.tls_pinned_public_key = strdup("sha256//YWJj");
    assert_int_equal(config_check_api(&cfg, &err), ERR_OK);
    free(cfg.tls_pinned_public_key);
    cfg.tls_pinned_public_key = strdup(missing);
    assert_int_equal(config_check_api(&cfg, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "tls.pinned_public_key: "));

    /* api_key_file: only without OUTPOST_API_KEY, and named as the key. */
    unsetenv("OUTPOST_API_KEY");
    cfg.api_key_file = strdup(missing);
    char *key = NULL;
    assert_int_equal(config_load_api_key(&cfg, &key, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "api_key_file: "));
    assert_non_null(strstr(err.message, "does not exist"));
    setenv("OUTPOST_API_KEY", "from-env", 1);
    assert_int_equal(config_load_api_key(&cfg, &key, &err), ERR_OK);
    dynbuf_secret_free(key);
    unsetenv("OUTPOST_API_KEY");
    config_free(&cfg);

    unlink(link_ok);
    unlink(link_dangling);
    unlink(present);
    support_tempdir_remove(dir);
}

/* Issue 23: signer_sha256 (hashes, stored lower-case), crl_files (each
 * must exist when the signature layer runs), trusted_ca_file "system"
 * (the OS store: no file to check). */
static void test_verify_pins_crls_system(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    const char *upper = "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789";
    char json[1024];
    snprintf(json, sizeof json,
             "{\"installer\": {\"verify\": {\"trusted_ca_file\": \"system\", \"signer_sha256\": [\"%s\"], "
             "\"crl_files\": [\"/nonexistent/outpost-test.crl\"]}}}",
             upper);
    assert_int_equal(load(json, &cfg, &err), ERR_OK);
    assert_int_equal(cfg.installer.verify.pin_count, 1);
    assert_string_equal(cfg.installer.verify.signer_sha256[0],
                        "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
    assert_int_equal(cfg.installer.verify.crl_file_count, 1);
    assert_int_equal(config_check_verify_files(&cfg.installer.verify, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "installer.verify.crl_files: /nonexistent/outpost-test.crl does not exist"));
    config_free(&cfg);

    assert_int_equal(load("{\"installer\": {\"verify\": {\"trusted_ca_file\": \"system\"}}}", &cfg, &err), ERR_OK);
    assert_int_equal(config_check_verify_files(&cfg.installer.verify, &err), ERR_OK);
    config_free(&cfg);

    static const char *const bad[] = {
        "{\"installer\": {\"verify\": {\"signer_sha256\": [\"abc\"]}}}",
        "{\"installer\": {\"verify\": {\"signer_sha256\": \"abcdef\"}}}",
        "{\"installer\": {\"verify\": {\"crl_files\": [\"\"]}}}",
    };
    static const char *const names[] = {"installer.verify.signer_sha256[0]", "installer.verify.signer_sha256",
                                        "installer.verify.crl_files[0]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(load(bad[i], &cfg, &err), ERR_CONFIG);
        if (!strstr(err.message, names[i]))
            fail_msg("\"%s\" does not name %s", err.message, names[i]);
        config_free(&cfg);
    }
}

static void test_state_path(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    assert_int_equal(load("{\"state_dir\": \"/var/lib/o\"}", &cfg, &err), ERR_OK);
    char *p = config_state_path(&cfg, "status.json");
    assert_string_equal(p, "/var/lib/o/status.json");
    free(p);
    p = config_state_path(&cfg, "/srv/feed/status.json");
    assert_string_equal(p, "/srv/feed/status.json");
    free(p);
    config_free(&cfg);
}

/* What Notepad and PowerShell write: a UTF-8 BOM and CRLF are read; UTF-16
 * is refused naming the fix; single backslashes get the JSON hint. */
static void test_windows_text(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    static const char bom_crlf[] = "\xEF\xBB\xBF{\r\n  \"state_dir\": \"C:\\\\ProgramData\\\\outpost\",\r\n"
                                   "  \"deploy\": {\"pass_reboot_code\": true}\r\n}\r\n";
    assert_int_equal(config_init_defaults(&cfg, &err), ERR_OK);
    assert_int_equal(config_load_text(&cfg, bom_crlf, sizeof bom_crlf - 1, "test.json", &err), ERR_OK);
    assert_string_equal(cfg.state_dir, "C:\\ProgramData\\outpost");
    assert_true(cfg.deploy.pass_reboot_code);
    config_free(&cfg);

    static const struct {
        const char *text;
        size_t len; /* 0: strlen */
        const char *must_mention;
    } cases[] = {
        {"\xFF\xFE{\0}\0", 6, "save it as UTF-8"},
        {"\xFE\xFF\0{\0}", 6, "save it as UTF-8"},
        {"{\0\"\0}\0", 6, "save it as UTF-8"},
        {"{\n\"state_dir\": \"C:\\ProgramData\\outpost\"}", 0, "line 2 has a single backslash"},
        {"{\"state_dir\": \"C:\\ProgramData\"}", 0, "write `\\\\` or `/`"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(config_init_defaults(&cfg, &err), ERR_OK);
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
        error_code rc = config_load_text(&cfg, cases[i].text, len, "test.json", &err);
        if (rc != ERR_CONFIG || !strstr(err.message, cases[i].must_mention))
            fail_msg("case %zu: rc=%d message=\"%s\"", i, rc, err.message);
        config_free(&cfg);
    }
}

/* The fleet policy's keys (PRODUCT.md section 11): windows parsed, every
 * mistake exit 2 naming the entry. */
static void test_policy_keys(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    assert_int_equal(load("{\"installer\": {\"target_version_prefix\": \"26.1.\", \"defer_on\": [\"battery\"]},"
                          " \"deploy\": {\"windows\": [\"Mon-Fri 22:00-05:00\", \"daily 2:00-4:00\","
                          " \"mon,WED 00:00-24:00\", \"Saturday 01:00-06:00\", \"Fri-Mon 23:00-01:30\"]}}",
                          &cfg, &err),
                     ERR_OK);
    assert_string_equal(cfg.installer.target_version_prefix, "26.1.");
    assert_true(cfg.installer.defer_battery);
    assert_false(cfg.installer.defer_metered);
    assert_int_equal(cfg.deploy.window_count, 5);
    const config_window *w = cfg.deploy.windows;
    assert_int_equal(w[0].days, 0x3e); /* Monday .. Friday */
    assert_int_equal(w[0].start_min, 22 * 60);
    assert_int_equal(w[0].end_min, 5 * 60);
    assert_int_equal(w[1].days, 0x7f);
    assert_int_equal(w[1].start_min, 120);
    assert_int_equal(w[1].end_min, 240);
    assert_int_equal(w[2].days, 0x0a);
    assert_int_equal(w[2].end_min, 1440);
    assert_int_equal(w[3].days, 0x40);
    assert_int_equal(w[4].days, 0x63); /* Friday, Saturday, Sunday, Monday */
    config_free(&cfg);

    static const struct {
        const char *json;
        const char *must_mention;
    } bad[] = {
        {"{\"deploy\": {\"windows\": [\"daily 02:00-04:00\", \"Mon-Fry 22:00-05:00\"]}}",
         "`deploy.windows[1]` \"Mon-Fry 22:00-05:00\""},
        {"{\"deploy\": {\"windows\": [\"Mon 22:00\"]}}", "`deploy.windows[0]`"},
        {"{\"deploy\": {\"windows\": [\"Mon 25:00-26:00\"]}}", "`deploy.windows[0]`"},
        {"{\"deploy\": {\"windows\": [\"Mon 22:60-23:00\"]}}", "`deploy.windows[0]`"},
        {"{\"deploy\": {\"windows\": [\"Mon 24:00-02:00\"]}}", "`deploy.windows[0]`"},
        {"{\"deploy\": {\"windows\": [\"Mon 02:00-02:00\"]}}", "a whole day is 00:00-24:00"},
        {"{\"deploy\": {\"windows\": [\"22:00-05:00\"]}}", "`deploy.windows[0]`"},
        {"{\"deploy\": {\"windows\": [\"Mon-Fri 22:00-05:00 UTC\"]}}", "`deploy.windows[0]`"},
        {"{\"deploy\": {\"windows\": [\"Mon-Fri22:00-05:00\"]}}", "`deploy.windows[0]`"},
        {"{\"deploy\": {\"windows\": \"daily 02:00-04:00\"}}", "`deploy.windows`"},
        {"{\"deploy\": {\"windows\": [3]}}", "`deploy.windows[0]`"},
        {"{\"installer\": {\"defer_on\": [\"wifi\"]}}", "`installer.defer_on[0]`"},
        {"{\"installer\": {\"defer_on\": \"metered\"}}", "`installer.defer_on`"},
        {"{\"installer\": {\"target_version_prefix\": \"\"}}", "`installer.target_version_prefix`"},
        {"{\"installer\": {\"target_version_prefix\": \"26 1\"}}", "`installer.target_version_prefix`"},
        {"{\"installer\": {\"target_version_prefix\": 26}}", "`installer.target_version_prefix`"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        error_code rc = load(bad[i].json, &cfg, &err);
        if (rc != ERR_CONFIG || !strstr(err.message, bad[i].must_mention))
            fail_msg("%s: rc %d, \"%s\" does not mention %s", bad[i].json, rc, err.message, bad[i].must_mention);
        config_free(&cfg);
    }
}

static void test_argv_keys(void **state)
{
    (void)state;
    config cfg;
    error_info err;
    assert_int_equal(load("{\"deploy\": {\"command\": [\"a\", \"{installer}\"], \"pe_args\": []},"
                          " \"installer\": {\"enabled\": false}}",
                          &cfg, &err),
                     ERR_OK);
    assert_int_equal(cfg.deploy.command_count, 2);
    assert_int_equal(cfg.deploy.pe_args_count, 0);
    assert_non_null(cfg.deploy.pe_args);
    assert_null(cfg.deploy.pe_args[0]);
    assert_false(cfg.installer.enabled);
    config_free(&cfg);
    assert_int_equal(load("{\"deploy\": {\"command\": null}}", &cfg, &err), ERR_OK);
    assert_null(cfg.deploy.command);
    config_free(&cfg);
    assert_int_equal(load("{\"deploy\": {\"pe_args\": [\"/S\", 1]}}", &cfg, &err), ERR_CONFIG);
    assert_non_null(strstr(err.message, "`deploy.pe_args[1]`"));
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_full_example),
        cmocka_unit_test(test_errors_name_the_key),
        cmocka_unit_test(test_proxy_keys),
        cmocka_unit_test(test_loopback_http_allowed),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_mirror_and_publish),
        cmocka_unit_test(test_check_api_needs_base_url),
        cmocka_unit_test(test_api_key_sources),
        cmocka_unit_test(test_named_files_must_exist),
        cmocka_unit_test(test_verify_pins_crls_system),
        cmocka_unit_test(test_state_path),
        cmocka_unit_test(test_windows_text),
        cmocka_unit_test(test_argv_keys),
        cmocka_unit_test(test_policy_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
