/* test_disposition.c — Content-Disposition file names: which headers give
 * which safe base name, which are rejected, which name nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "installer/disposition.h"

/* expect: the name, or NULL for "no name" (ERR_OK) ; reject: ERR_REJECTED */
static const struct {
    const char *header;
    const char *expect;
    bool reject;
} cases[] = {
    /* plain forms */
    {"attachment; filename=\"setup.exe\"", "setup.exe", false},
    {"attachment; filename=setup.msi", "setup.msi", false},
    {"attachment;filename=setup.msi ", "setup.msi", false},
    {"ATTACHMENT; FILENAME=\"Setup 24.3.1.exe\"", "Setup 24.3.1.exe", false},
    {"attachment; filename=\"a\\\"b.exe\"", NULL, true}, /* '"' inside: forbidden on Windows */
    {"attachment; size=10; filename=\"x.exe\"; creation-date=\"x\"", "x.exe", false},
    /* filename* (RFC 5987), which wins over filename */
    {"attachment; filename*=UTF-8''setup%20x.exe", "setup x.exe", false},
    {"attachment; filename=\"plain.exe\"; filename*=UTF-8''ext.exe", "ext.exe", false},
    {"attachment; filename*=UTF-8''ext.exe; filename=\"plain.exe\"", "ext.exe", false},
    {"attachment; filename*=utf-8'en'caf%C3%A9.msi", "caf\xc3\xa9.msi", false},
    {"attachment; filename*=ISO-8859-1''caf%E9.msi", "caf\xc3\xa9.msi", false},
    {"attachment; filename=\"plain.exe\"; filename*=KOI8-R''x.exe", "plain.exe", false}, /* unknown charset */
    {"attachment; filename=\"plain.exe\"; filename*=UTF-8''bad%zz.exe", "plain.exe", false},
    /* reduced: directories and drive dropped, trailing dots/spaces dropped */
    {"attachment; filename=\"C:\\x\\setup.exe\"", "setup.exe", false},
    {"attachment; filename=\"C:\\\\x\\\\setup.exe\"", "setup.exe", false},
    {"attachment; filename=\"/tmp/setup.exe\"", "setup.exe", false},
    {"attachment; filename=\"dl/setup.exe\"", "setup.exe", false},
    {"attachment; filename=\"C:setup.exe\"", "setup.exe", false},
    {"attachment; filename=\"setup.exe. . \"", "setup.exe", false},
    {"attachment; filename=\"  setup.exe\"", "setup.exe", false},
    {"attachment; filename*=UTF-8''dir%2Fsetup.exe", "setup.exe", false},
    /* no name: the caller falls back to a name made from the version */
    {NULL, NULL, false},
    {"attachment", NULL, false},
    {"inline", NULL, false},
    {"attachment; filename=\"\"", NULL, false},
    {"attachment; name=\"x.exe\"", NULL, false},
    /* traversal: directories stripped to the base name (RFC 6266 section 4.3) */
    {"attachment; filename=\"../../x.exe\"", "x.exe", false},
    {"attachment; filename=\"../../evil.exe\"", "evil.exe", false},
    {"attachment; filename=\"..\\\\..\\\\x.exe\"", "x.exe", false},
    {"attachment; filename=\"a\\\\b.exe\"", "b.exe", false},
    {"attachment; filename=\"a/../x.exe\"", "x.exe", false},
    {"attachment; filename*=UTF-8''..%2F..%2Fx.exe", "x.exe", false},
    {"attachment; filename*=UTF-8''..%5C..%5Cx.exe", "x.exe", false},
    /* rejected: nothing safe remains once the directories are dropped */
    {"attachment; filename=\"..\"", NULL, true},
    {"attachment; filename=\"../..\"", NULL, true},
    {"attachment; filename=\"a/..\"", NULL, true},
    {"attachment; filename=\"../../CON.exe\"", NULL, true},
    /* rejected: Windows device names, any case, with or without extension */
    {"attachment; filename=\"CON.msi\"", NULL, true},
    {"attachment; filename=con", NULL, true},
    {"attachment; filename=\"nul.tar.gz\"", NULL, true},
    {"attachment; filename=\"Aux .exe\"", NULL, true},
    {"attachment; filename=\"PRN\"", NULL, true},
    {"attachment; filename=\"COM1.exe\"", NULL, true},
    {"attachment; filename=\"lpt9\"", NULL, true},
    {"attachment; filename*=UTF-8''COM%C2%B9.exe", NULL, true},
    {"attachment; filename=\"CONOUT$.exe\"", NULL, true},
    {"attachment; filename=\"CONIN$\"", NULL, true},
    {"attachment; filename=\"conin$.msi\"", NULL, true},
    {"attachment; filename=\"CON .exe\"", NULL, true},
    {"attachment; filename=\"CON..exe\"", NULL, true},
    {"attachment; filename=\"nul  \"", NULL, true},
    {"attachment; filename*=UTF-8''LPT%C2%B3.exe", NULL, true},
    {"attachment; filename*=UTF-8''com%C2%B2", NULL, true},
    {"attachment; filename=\"LPT0.exe\"", NULL, true}, /* Microsoft lists COM0 and LPT0 too */
    {"attachment; filename=\"COM0\"", NULL, true},
    /* not device names */
    {"attachment; filename=\"COM10.exe\"", "COM10.exe", false},
    {"attachment; filename=\"console.exe\"", "console.exe", false},
    {"attachment; filename=\"CONIN.exe\"", "CONIN.exe", false},
    {"attachment; filename=\"xCON.exe\"", "xCON.exe", false},
    {"attachment; filename*=UTF-8''COM%C2%B4.exe", "COM\xc2\xb4.exe", false}, /* an acute accent, not a digit */
    /* rejected: streams, forbidden and control characters, bad UTF-8 */
    {"attachment; filename=\"setup.exe:hidden\"", NULL, true},
    {"attachment; filename=\"x:setup.exe\"", "setup.exe", false}, /* a drive prefix */
    {"attachment; filename=\"a:b:c.exe\"", NULL, true},
    {"attachment; filename=\"set?up.exe\"", NULL, true},
    {"attachment; filename=\"set*up.exe\"", NULL, true},
    {"attachment; filename=\"a<b>.exe\"", NULL, true},
    {"attachment; filename=\"a|b.exe\"", NULL, true},
    {"attachment; filename*=UTF-8''setup.exe%00.txt", NULL, true},
    {"attachment; filename*=UTF-8''set%0Aup.exe", NULL, true},
    {"attachment; filename=\"set\tup.exe\"", NULL, true},
    {"attachment; filename*=UTF-8''bad%FF.exe", NULL, true},
    {"attachment; filename*=UTF-8''%C0%AF.exe", NULL, true}, /* overlong '/' */
    /* rejected: nothing left once reduced */
    {"attachment; filename=\"dir/\"", NULL, true},
    {"attachment; filename=\"...\"", NULL, true},
};

static void test_table(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *name = (char *)"sentinel";
        error_info err;
        error_clear(&err);
        error_code rc = disposition_file_name(cases[i].header, &name, &err);
        const char *h = cases[i].header ? cases[i].header : "(null)";
        if (cases[i].reject) {
            if (rc != ERR_REJECTED)
                fail_msg("%s: expected a rejection, got %d (%s)", h, rc, name ? name : "no name");
            assert_null(name);
            assert_true(strlen(err.message) > 10);
            continue;
        }
        if (rc != ERR_OK)
            fail_msg("%s: unexpected error %s", h, err.message);
        if (!cases[i].expect) {
            if (name)
                fail_msg("%s: expected no name, got \"%s\"", h, name);
            continue;
        }
        if (!name || strcmp(name, cases[i].expect) != 0)
            fail_msg("%s: expected \"%s\", got \"%s\"", h, cases[i].expect, name ? name : "(null)");
        assert_true(disposition_name_is_safe(name, NULL));
        free(name);
    }
}

static void test_length_cap(void **unused)
{
    (void)unused;
    char header[DISPOSITION_HEADER_MAX + 64];
    char longname[DISPOSITION_NAME_MAX + 8];
    memset(longname, 'a', sizeof longname);
    memcpy(longname + DISPOSITION_NAME_MAX + 1 - 4, ".exe", 5); /* NAME_MAX + 1 bytes */
    snprintf(header, sizeof header, "attachment; filename=\"%s\"", longname);
    char *name = NULL;
    error_info err;
    assert_int_equal(disposition_file_name(header, &name, &err), ERR_REJECTED);
    assert_null(name);

    longname[DISPOSITION_NAME_MAX - 4] = '\0';
    strcat(longname, ".exe"); /* exactly NAME_MAX bytes */
    snprintf(header, sizeof header, "attachment; filename=\"%s\"", longname);
    assert_int_equal(disposition_file_name(header, &name, &err), ERR_OK);
    assert_int_equal(strlen(name), DISPOSITION_NAME_MAX);
    free(name);

    char *huge = malloc(DISPOSITION_HEADER_MAX + 100);
    memset(huge, 'x', DISPOSITION_HEADER_MAX + 99);
    huge[DISPOSITION_HEADER_MAX + 99] = '\0';
    assert_int_equal(disposition_file_name(huge, &name, &err), ERR_REJECTED);
    free(huge);
}

static void test_is_safe(void **unused)
{
    (void)unused;
    assert_true(disposition_name_is_safe("setup.exe", NULL));
    assert_true(disposition_name_is_safe("installer-24.3.1.exe", NULL));
    assert_false(disposition_name_is_safe("a/b.exe", NULL));
    assert_false(disposition_name_is_safe("a\\b.exe", NULL));
    assert_false(disposition_name_is_safe("..", NULL));
    assert_false(disposition_name_is_safe("", NULL));
    assert_false(disposition_name_is_safe(NULL, NULL));
    assert_false(disposition_name_is_safe("setup.exe.", NULL));
    assert_false(disposition_name_is_safe("CON.msi", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_length_cap),
        cmocka_unit_test(test_is_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
