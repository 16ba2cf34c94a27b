/* wk_json.cu — the worker's JSON output (wk.h: wk_json_str, wk_jprintf). */
#include <stdarg.h>
#include <stdio.h>

#include "wk.h"

void wk_json_str(std::vector<char> &out, const char *s)
{
    out.push_back('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { out.push_back('\\'); out.push_back((char)c); }
        else if (c < 0x20) { char e[8]; snprintf(e, sizeof e, "\\u%04x", c); out.insert(out.end(), e, e + 6); }
        else out.push_back((char)c);
    }
    out.push_back('"');
}

void wk_jprintf(std::vector<char> &out, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
    out.insert(out.end(), buf, buf + n);
}
