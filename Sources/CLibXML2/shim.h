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
#include <libxml/SAX2.h>
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
// The HTML parser builds libxml2's whole tree before fetchrun copies it, so a page of millions
// of tiny elements cost gigabytes and seconds before the copy could refuse it. These count the
// elements and text nodes as the parser makes them (in the context's `_private`, which
// htmlCtxtReadMemory leaves alone) and stop it once there are more than the limit; the caller
// then refuses the page instead of reading the part built.
//
// They also keep the tree within a depth: libxml2's SAX2 builder halts the whole parse at 256
// open elements (without XML_PARSE_HUGE, which must stay off), so 300 unclosed <font> tags lost
// everything after them. An element opened deeper than `depth_limit` is not made: its content
// goes to the element open at the limit (flattened), and its end, which the HTML parser always
// reports before any end of the elements around it, is skipped to match.
typedef struct {
    unsigned long made;
    unsigned long limit;
    unsigned long depth_limit;
    unsigned long flattened;
    unsigned long skipped_open;
} fetchrun_html_node_budget;

static void fetchrun_html_start_element(void *context, const xmlChar *name, const xmlChar **attributes) {
    xmlParserCtxtPtr parser = (xmlParserCtxtPtr)context;
    fetchrun_html_node_budget *budget = (fetchrun_html_node_budget *)parser->_private;
    if (budget->skipped_open > 0 || (unsigned long)parser->nodeNr >= budget->depth_limit) {
        budget->skipped_open++;
        budget->flattened++;
        return;
    }
    if (++budget->made > budget->limit) {
        xmlStopParser(parser);
        return;
    }
    xmlSAX2StartElement(context, name, attributes);
}

static void fetchrun_html_end_element(void *context, const xmlChar *name) {
    xmlParserCtxtPtr parser = (xmlParserCtxtPtr)context;
    fetchrun_html_node_budget *budget = (fetchrun_html_node_budget *)parser->_private;
    if (budget->skipped_open > 0) {
        budget->skipped_open--;
        return;
    }
    xmlSAX2EndElement(context, name);
}

static void fetchrun_html_characters(void *context, const xmlChar *text, int length) {
    xmlParserCtxtPtr parser = (xmlParserCtxtPtr)context;
    fetchrun_html_node_budget *budget = (fetchrun_html_node_budget *)parser->_private;
    // Text appended to a text node makes no new node; where there is no node yet, none is made.
    int makesNode = parser->node != NULL && (parser->node->last == NULL || parser->node->last->type != XML_TEXT_NODE);
    if (makesNode && ++budget->made > budget->limit) {
        xmlStopParser(parser);
        return;
    }
    xmlSAX2Characters(context, text, length);
}

// htmlReadMemory, stopped past `limit` elements and texts (`*passed` says whether it was), its
// elements no deeper than `depth_limit` (`*flattened` counts those opened deeper).
static inline htmlDocPtr fetchrun_html_read_memory(const char *buffer, int size, const char *encoding, int options, unsigned long limit, unsigned long depth_limit, int *passed, unsigned long *flattened) {
    *passed = 0;
    *flattened = 0;
    htmlParserCtxtPtr parser = htmlNewParserCtxt();
    if (parser == NULL) return NULL;
    fetchrun_html_node_budget budget = { 0, limit, depth_limit, 0, 0 };
    parser->_private = &budget;
    parser->sax->startElement = fetchrun_html_start_element;
    parser->sax->endElement = fetchrun_html_end_element;
    parser->sax->characters = fetchrun_html_characters;
    htmlDocPtr document = htmlCtxtReadMemory(parser, buffer, size, NULL, encoding, options);
    *passed = budget.made > limit;
    *flattened = budget.flattened;
    parser->_private = NULL;
    htmlFreeParserCtxt(parser);
    return document;
}
#endif
