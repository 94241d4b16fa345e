error_code platform_event_log(platform_event_level level, unsigned event_id, const char *text, error_info *err)
{
    (void)level;
    (void)event_id;
    (void)text;
    (void)err;
    return ERR_OK;
}
