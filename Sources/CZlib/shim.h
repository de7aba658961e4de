#ifndef FETCHRUN_CZLIB_SHIM_H
#define FETCHRUN_CZLIB_SHIM_H
// zlib, for the fixture server's gzip responses. deflateInit2 is a macro: wrap it.
#include <zlib.h>

static inline int fetchrun_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
#endif
