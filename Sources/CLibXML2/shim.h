#ifndef FETCHRUN_CLIBXML2_SHIM_H
#define FETCHRUN_CLIBXML2_SHIM_H
// Debian builds libxml2 with ICU; the ICU types it pulls in clash with Foundation's copy
// ("'UErrorCode' has different definitions in different modules"). The flag only adds
// trailing fields to xmlCharEncodingHandler, which Swift never holds by value.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlreader.h>
#include <libxml/xmlerror.h>
#include <libxml/encoding.h>
#include <libxml/HTMLparser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

// xmlFree is a global function-pointer variable, which Swift 6 treats as shared mutable state.
static inline void fetchrun_xml_free(void *pointer) {
    xmlFree(pointer);
}

// libxml2 writes some errors (failed encoding conversions among them) straight to stderr
// through its "generic" handler, whatever XML_PARSE_NOERROR says: raw document bytes on the
// user's terminal. The handler is variadic, which Swift cannot write, and per thread, so each
// parsing thread calls this first.
static void fetchrun_xml_ignore_generic_error(void *context, const char *message, ...) {
    (void)context;
    (void)message;
}

static inline void fetchrun_xml_silence_generic_errors(void) {
    xmlSetGenericErrorFunc(NULL, fetchrun_xml_ignore_generic_error);
}
#endif
