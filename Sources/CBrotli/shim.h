#ifndef FETCHRUN_CBROTLI_SHIM_H
#define FETCHRUN_CBROTLI_SHIM_H
// The brotli encoder, for the fixture server's `Content-Encoding: br` responses.
#include <brotli/encode.h>
#endif
