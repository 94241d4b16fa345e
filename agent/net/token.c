/*
 * token.c — the access token's exchange body, answer parsing and renewal
 * timing (see token.h). No I/O here: http.c sends the exchange.
 */
#include "net/token.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/text.h"

void token_state_init(token_state *state)
{
    memset(state, 0, sizeof *state);
}

void token_state_clear(token_state *state)
{
    dynbuf_secret_free(state->access_token);
    uint64_t generation = state->generation;
    token_state_init(state);
    state->generation = generation;
}

int64_t token_renew_margin_ms(int64_t lifetime_ms)
{
    int64_t margin = lifetime_ms / 15;
    return margin > 0 ? margin : 1;
}

bool token_usable(const token_state *state, int64_t now_ms)
{
    return state->access_token && !state->invalid && now_ms < state->renew_at_ms;
}

bool token_invalidate(token_state *state, uint64_t generation)
{
    if (!state->access_token || generation != state->generation || state->invalid)
        return false;
    state->invalid = true;
    return true;
}

char *token_request_body(const char *api_key, size_t *len)
{
    /* Built by hand rather than with cJSON so that no unwiped copy of the
     * key is left in cJSON's freed buffers. */
    size_t klen = strlen(api_key);
    size_t cap = klen * 6 + 32;
    char *body = malloc(cap);
    if (!body)
        return NULL;
    size_t n = 0;
    static const char head[] = "{\"refresh_token\":\"";
    memcpy(body, head, sizeof head - 1);
    n = sizeof head - 1;
    for (size_t i = 0; i < klen; i++) {
        unsigned char c = (unsigned char)api_key[i];
        if (c == '"' || c == '\\') {
            body[n++] = '\\';
            body[n++] = (char)c;
        } else if (c < 0x20) {
            body[n++] = '\\';
            body[n++] = 'u';
            body[n++] = '0';
            body[n++] = '0';
            text_hex(&c, 1, body + n); /* its NUL is overwritten next */
            n += 2;
        } else {
            body[n++] = (char)c;
        }
    }
    body[n++] = '"';
    body[n++] = '}';
    body[n] = '\0';
    if (len)
        *len = n;
    return body;
}

/* Reads expires_in (seconds) from obj: a positive number or decimal string. */
static int64_t read_expires_in_ms(const cJSON *obj)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(obj, "expires_in");
    double seconds = 0;
    if (cJSON_IsNumber(e)) {
        seconds = e->valuedouble;
    } else if (cJSON_IsString(e) && e->valuestring) {
        char *end = NULL;
        seconds = strtod(e->valuestring, &end);
        if (end == e->valuestring || *end != '\0')
            seconds = 0;
    }
    if (!(seconds > 0) || seconds > 365.0 * 24 * 3600)
        return 0;
    return (int64_t)(seconds * 1000);
}

/* Wipes every string in a cJSON tree (the token answer holds the token). */
static void wipe_tree(cJSON *node)
{
    for (; node; node = node->next) {
        if (node->valuestring)
            dynbuf_wipe(node->valuestring, strlen(node->valuestring));
        wipe_tree(node->child);
    }
}

error_code token_accept(token_state *state, const char *body, size_t len, int64_t sent_at_ms, error_info *err)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root)
        return error_set(err, ERR_PROTOCOL, "token exchange: the answer is not JSON");
    const cJSON *holder = root;
    const cJSON *token = cJSON_GetObjectItemCaseSensitive(root, "access_token");
    if (!token) {
        const cJSON *resources = cJSON_GetObjectItemCaseSensitive(root, "resources");
        const cJSON *first = cJSON_IsArray(resources) ? cJSON_GetArrayItem(resources, 0) : NULL;
        if (cJSON_IsObject(first)) {
            holder = first;
            token = cJSON_GetObjectItemCaseSensitive(first, "access_token");
        }
    }
    error_code rc = ERR_OK;
    if (!token) {
        rc = error_set(err, ERR_PROTOCOL, "token exchange: field `access_token` is missing from the answer");
    } else if (!cJSON_IsString(token) || !token->valuestring) {
        rc = error_set(err, ERR_PROTOCOL, "token exchange: field `access_token` is not a string");
    } else if (token->valuestring[0] == '\0') {
        rc = error_set(err, ERR_PROTOCOL, "token exchange: field `access_token` is empty");
    } else {
        char *copy = malloc(strlen(token->valuestring) + 1);
        if (!copy) {
            rc = error_set(err, ERR_NOMEM, "token exchange: out of memory");
        } else {
            strcpy(copy, token->valuestring);
            int64_t lifetime = read_expires_in_ms(holder);
            if (lifetime == 0 && holder != root)
                lifetime = read_expires_in_ms(root);
            if (lifetime == 0)
                lifetime = TOKEN_DEFAULT_LIFETIME_MS;
            dynbuf_secret_free(state->access_token);
            state->access_token = copy;
            state->generation++;
            state->invalid = false;
            state->obtained_ms = sent_at_ms;
            state->lifetime_ms = lifetime;
            state->renew_at_ms = sent_at_ms + lifetime - token_renew_margin_ms(lifetime);
        }
    }
    wipe_tree(root);
    cJSON_Delete(root);
    return rc;
}
