/*
 * jsonx.c — dotted-path readers that name the path in errors, and the two
 * writers every module needs (see jsonx.h). Grown from api.c's field
 * readers.
 */
#include "core/jsonx.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonx_reader_init(jsonx_reader *r, const char *where, const char *prefix, error_code code, error_info *err)
{
    r->where = where;
    r->prefix = prefix ? prefix : "";
    r->code = code;
    r->err = err;
    r->rc = ERR_OK;
}

error_code jsonx_fail(jsonx_reader *r, const char *path, const char *what)
{
    if (!r)
        return ERR_OK;
    if (r->rc == ERR_OK) {
        if (r->prefix[0])
            r->rc = error_set(r->err, r->code, "%s: %s.%s %s", r->where, r->prefix, path, what);
        else
            r->rc = error_set(r->err, r->code, "%s: field `%s` %s", r->where, path, what);
    }
    return r->rc;
}

const cJSON *jsonx_walk(jsonx_reader *r, const cJSON *obj, const char *path)
{
    char step[64];
    const char *p = path;
    const cJSON *node = obj;
    while (node) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof step)
            return NULL;
        memcpy(step, p, n);
        step[n] = '\0';
        node = cJSON_GetObjectItemCaseSensitive(node, step);
        if (!node || cJSON_IsNull(node))
            return NULL;
        if (p[n] == '\0')
            return node;
        if (!cJSON_IsObject(node)) {
            char where[128];
            snprintf(where, sizeof where, "%.*s", (int)(p + n - path), path);
            jsonx_fail(r, where, "is not an object");
            return NULL;
        }
        p += n + 1;
    }
    return NULL;
}

const char *jsonx_string(jsonx_reader *r, const cJSON *obj, const char *path)
{
    const cJSON *v = jsonx_walk(r, obj, path);
    if (!v)
        return NULL;
    if (!cJSON_IsString(v) || !v->valuestring) {
        jsonx_fail(r, path, "is not a string");
        return NULL;
    }
    return v->valuestring;
}

const char *jsonx_nonempty(jsonx_reader *r, const cJSON *obj, const char *path)
{
    const char *s = jsonx_string(r, obj, path);
    return s && s[0] ? s : NULL;
}

bool jsonx_bool(jsonx_reader *r, const cJSON *obj, const char *path, bool fallback)
{
    const cJSON *v = jsonx_walk(r, obj, path);
    if (!v)
        return fallback;
    if (!cJSON_IsBool(v)) {
        jsonx_fail(r, path, "is not a boolean");
        return fallback;
    }
    return cJSON_IsTrue(v);
}

double jsonx_number(jsonx_reader *r, const cJSON *obj, const char *path, bool *present)
{
    const cJSON *v = jsonx_walk(r, obj, path);
    *present = false;
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v)) {
        jsonx_fail(r, path, "is not a number");
        return 0;
    }
    *present = true;
    return v->valuedouble;
}

/* Integer: a JSON number with no fraction, or, with allow_string, a
 * decimal string (protobuf's JSON form of int64, which keeps all 64 bits). */
static bool int64_of(const cJSON *v, bool allow_string, int64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d >= -9.2e18 && d <= 9.2e18) || d != (double)(int64_t)d) /* also false for NaN */
            return false;
        *out = (int64_t)d;
        return true;
    }
    if (allow_string && cJSON_IsString(v) && v->valuestring && v->valuestring[0]) {
        const char *s = v->valuestring;
        if (*s == '-')
            s++;
        if (!*s)
            return false;
        for (const char *p = s; *p; p++)
            if (!isdigit((unsigned char)*p))
                return false;
        char *end = NULL;
        long long ll = strtoll(v->valuestring, &end, 10);
        if (*end != '\0' || ll == LLONG_MAX || ll == LLONG_MIN)
            return false;
        *out = (int64_t)ll;
        return true;
    }
    return false;
}

int64_t jsonx_int64(jsonx_reader *r, const cJSON *obj, const char *path, bool allow_string, int64_t fallback)
{
    const cJSON *v = jsonx_walk(r, obj, path);
    if (!v)
        return fallback;
    int64_t out;
    if (!int64_of(v, allow_string, &out)) {
        jsonx_fail(r, path, "is not an integer");
        return fallback;
    }
    return out;
}

const cJSON *jsonx_string_array(jsonx_reader *r, const cJSON *obj, const char *path)
{
    const cJSON *v = jsonx_walk(r, obj, path);
    if (!v)
        return NULL;
    if (!cJSON_IsArray(v)) {
        jsonx_fail(r, path, "is not an array");
        return NULL;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, v)
    {
        if (!cJSON_IsString(item)) {
            jsonx_fail(r, path, "holds an element that is not a string");
            return NULL;
        }
    }
    return v;
}

bool jsonx_add_string_or_null(cJSON *obj, const char *name, const char *value)
{
    return value ? cJSON_AddStringToObject(obj, name, value) != NULL : cJSON_AddNullToObject(obj, name) != NULL;
}

bool jsonx_set(cJSON *obj, const char *name, cJSON *value)
{
    if (!value)
        return false;
    bool ok =
        obj && (cJSON_GetObjectItemCaseSensitive(obj, name) ? cJSON_ReplaceItemInObjectCaseSensitive(obj, name, value)
                                                            : cJSON_AddItemToObject(obj, name, value));
    if (!ok)
        cJSON_Delete(value);
    return ok;
}

bool jsonx_exact_integer(const cJSON *o, const char *name, int64_t min, int64_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(item))
        return false;
    double d = item->valuedouble;
    if (!(d >= (double)min && d < 9007199254740992.0) || d != floor(d))
        return false;
    *out = (int64_t)d;
    return true;
}
