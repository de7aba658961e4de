// The least a repeat run can cost: libcurl alone, from C, sending the same requests fetchrun
// sends, with nothing else — no config, no state database, no parsing, no report.
//
//   fetchrun-curl-yardstick --urls FILE --state FILE [--in-flight N] [--per-host N] [--store DATABASE]
//                           [--request-headers FILE]
//
// Fetches every URL in FILE (one a line) through one curl multi handle, N at once (512, as
// fetchrun's max_in_flight) and at most --per-host connections to one host (6, as fetchrun's
// http.per_host). It remembers each response's ETag and Last-Modified in the state file and
// sends them back as If-None-Match / If-Modified-Since on the next run, so its second run gets
// the 304s a feed reader's would. Bodies are counted and dropped. The state file is written
// whole to a temporary name and renamed over the old one.
//
// --request-headers names a file of the header lines fetchrun sends besides the ones curl
// makes and the validators (Benchmarks/request_headers.py writes it: fetchrun's User-Agent and
// Accept), so that the requests are the same byte for byte: curl formats every header line
// one character at a time, and the server reads each one.
//
// With --store it is the floor of a cold run instead: each 200's body is kept, parsed as it
// arrives with libxml2's reader (title, link and id of every RSS item or Atom entry, nothing
// else), and every item is stored in the SQLite database DATABASE in one transaction at the
// end (WAL, synchronous=NORMAL, as fetchrun's state.db): the least any tool can spend to fetch,
// parse and store.
//
// Prints how many responses were 200, 304 or something else, and exits 1 if any was not a
// 200 or a 304. Benchmarks/compare.py runs it beside fetchrun in the repeat-run table.
#include <curl/curl.h>
#include <libxml/xmlreader.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    char *url;
    char *etag;          // from the state file, then from this run's response
    char *lastModified;
    struct curl_slist *headers;
    long status;
    char *body;          // --store: the body so far
    size_t size, capacity;
} Feed;

typedef struct {
    int feed;
    char *id, *title, *link;
} StoredItem;

static StoredItem *items;
static size_t itemCount, itemCapacity;
static int keepsBodies;
// --request-headers: the User-Agent (sent where curl puts its own) and the other lines.
static char *userAgent;
static struct curl_slist *requestHeaders;

static void fail(const char *message, const char *detail) {
    fprintf(stderr, "fetchrun-curl-yardstick: %s%s\n", message, detail ? detail : "");
    exit(2);
}

static char *copyTrimmed(const char *start, size_t length) {
    while (length > 0 && (*start == ' ' || *start == '\t')) { start++; length--; }
    while (length > 0 && (start[length - 1] == '\r' || start[length - 1] == '\n' || start[length - 1] == ' ')) length--;
    char *copy = malloc(length + 1);
    if (!copy) fail("out of memory", NULL);
    memcpy(copy, start, length);
    copy[length] = 0;
    return copy;
}

static size_t dropBody(char *data, size_t size, size_t count, void *feed) {
    (void)data; (void)feed;
    return size * count;
}

static size_t keepBody(char *data, size_t size, size_t count, void *context) {
    Feed *feed = context;
    size_t length = size * count;
    if (feed->size + length > feed->capacity) {
        size_t capacity = feed->capacity ? feed->capacity : 65536;
        while (capacity < feed->size + length) capacity *= 2;
        char *grown = realloc(feed->body, capacity);
        if (!grown) return 0;
        feed->body = grown;
        feed->capacity = capacity;
    }
    memcpy(feed->body + feed->size, data, length);
    feed->size += length;
    return length;
}

static char *copyText(const xmlChar *text) {
    return strdup(text ? (const char *)text : "");
}

// Title, link and id of every item (RSS) or entry (Atom), through the reader: one pass, no tree.
static void parseItems(int index, Feed *feed) {
    xmlTextReaderPtr reader = xmlReaderForMemory(feed->body, (int)feed->size, feed->url, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA);
    if (!reader) return;
    StoredItem current = {0};
    int inItem = 0;
    while (xmlTextReaderRead(reader) == 1) {
        int type = xmlTextReaderNodeType(reader);
        const xmlChar *name = xmlTextReaderConstLocalName(reader);
        if (!name) continue;
        if (type == XML_READER_TYPE_ELEMENT) {
            if (!xmlStrcmp(name, BAD_CAST "item") || !xmlStrcmp(name, BAD_CAST "entry")) {
                inItem = 1;
                current = (StoredItem){.feed = index};
            } else if (inItem && !current.title && !xmlStrcmp(name, BAD_CAST "title")) {
                xmlChar *text = xmlTextReaderReadString(reader);
                current.title = copyText(text);
                xmlFree(text);
            } else if (inItem && !current.link && !xmlStrcmp(name, BAD_CAST "link")) {
                xmlChar *href = xmlTextReaderGetAttribute(reader, BAD_CAST "href");
                xmlChar *text = href ? href : xmlTextReaderReadString(reader);
                current.link = copyText(text);
                xmlFree(text);
            } else if (inItem && !current.id && (!xmlStrcmp(name, BAD_CAST "guid") || !xmlStrcmp(name, BAD_CAST "id"))) {
                xmlChar *text = xmlTextReaderReadString(reader);
                current.id = copyText(text);
                xmlFree(text);
            }
        } else if (type == XML_READER_TYPE_END_ELEMENT && inItem && (!xmlStrcmp(name, BAD_CAST "item") || !xmlStrcmp(name, BAD_CAST "entry"))) {
            inItem = 0;
            if (!current.id) current.id = strdup(current.link ? current.link : current.title ? current.title : "");
            if (itemCount == itemCapacity) {
                itemCapacity = itemCapacity ? itemCapacity * 2 : 4096;
                items = realloc(items, itemCapacity * sizeof(StoredItem));
                if (!items) fail("out of memory", NULL);
            }
            items[itemCount++] = current;
            current = (StoredItem){0};
        }
    }
    xmlFreeTextReader(reader);
    free(current.id); free(current.title); free(current.link);
}

static void check(int code, sqlite3 *database, const char *what) {
    if (code != SQLITE_OK && code != SQLITE_DONE && code != SQLITE_ROW) fail(what, sqlite3_errmsg(database));
}

// Every item in one transaction, through one prepared statement.
static void storeItems(const char *path, Feed *feeds) {
    sqlite3 *database;
    check(sqlite3_open(path, &database), database, "cannot open the database: ");
    check(sqlite3_exec(database, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                       "CREATE TABLE IF NOT EXISTS items (feed TEXT, id TEXT, title TEXT, link TEXT, PRIMARY KEY (feed, id))", NULL, NULL, NULL), database, "schema: ");
    check(sqlite3_exec(database, "BEGIN", NULL, NULL, NULL), database, "begin: ");
    sqlite3_stmt *insert;
    check(sqlite3_prepare_v2(database, "INSERT OR REPLACE INTO items (feed, id, title, link) VALUES (?, ?, ?, ?)", -1, &insert, NULL), database, "prepare: ");
    for (size_t i = 0; i < itemCount; i++) {
        sqlite3_bind_text(insert, 1, feeds[items[i].feed].url, -1, SQLITE_STATIC);
        sqlite3_bind_text(insert, 2, items[i].id, -1, SQLITE_STATIC);
        sqlite3_bind_text(insert, 3, items[i].title ? items[i].title : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(insert, 4, items[i].link ? items[i].link : "", -1, SQLITE_STATIC);
        check(sqlite3_step(insert), database, "insert: ");
        sqlite3_reset(insert);
    }
    sqlite3_finalize(insert);
    check(sqlite3_exec(database, "COMMIT", NULL, NULL, NULL), database, "commit: ");
    sqlite3_close(database);
}

// Keeps the validators of the last response (a redirect's headers come first).
static size_t readHeader(char *line, size_t size, size_t count, void *context) {
    Feed *feed = context;
    size_t length = size * count;
    const char *names[] = {"etag:", "last-modified:"};
    char **slots[] = {&feed->etag, &feed->lastModified};
    for (int i = 0; i < 2; i++) {
        size_t nameLength = strlen(names[i]);
        if (length > nameLength && strncasecmp(line, names[i], nameLength) == 0) {
            free(*slots[i]);
            *slots[i] = copyTrimmed(line + nameLength, length - nameLength);
        }
    }
    return length;
}

static void addHeader(Feed *feed, const char *name, const char *value) {
    if (!value || !*value) return;
    size_t length = strlen(name) + strlen(value) + 3;
    char *line = malloc(length);
    if (!line) fail("out of memory", NULL);
    snprintf(line, length, "%s: %s", name, value);
    feed->headers = curl_slist_append(feed->headers, line);
    free(line);
}

static void readRequestHeaders(const char *path) {
    FILE *file = fopen(path, "r");
    if (!file) fail("cannot read ", path);
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &capacity, file)) > 0) {
        char *header = copyTrimmed(line, (size_t)length);
        if (strncasecmp(header, "User-Agent:", 11) == 0) {
            free(userAgent);
            userAgent = copyTrimmed(header + 11, strlen(header + 11));
        } else if (*header) {
            requestHeaders = curl_slist_append(requestHeaders, header);
        }
        free(header);
    }
    free(line);
    fclose(file);
}

static CURL *transfer(Feed *feed) {
    CURL *easy = curl_easy_init();
    if (!easy) fail("curl_easy_init failed", NULL);
    for (struct curl_slist *header = requestHeaders; header; header = header->next) {
        feed->headers = curl_slist_append(feed->headers, header->data);
    }
    addHeader(feed, "If-None-Match", feed->etag);
    addHeader(feed, "If-Modified-Since", feed->lastModified);
    curl_easy_setopt(easy, CURLOPT_URL, feed->url);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, feed);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, feed->headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, keepsBodies ? keepBody : dropBody);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, feed);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, readHeader);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, feed);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(easy, CURLOPT_TIMEOUT, 30L);
    if (userAgent) curl_easy_setopt(easy, CURLOPT_USERAGENT, userAgent);
    return easy;
}

// State lines: url TAB etag TAB last-modified (either may be empty).
static void readState(const char *path, Feed *feeds, int count) {
    FILE *file = fopen(path, "r");
    if (!file) return; // the first run
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    int expected = 0; // the file is written in the URLs' order: look there first
    while ((length = getline(&line, &capacity, file)) > 0) {
        char *etag = strchr(line, '\t');
        char *lastModified = etag ? strchr(etag + 1, '\t') : NULL;
        if (!lastModified) continue;
        *etag++ = 0;
        *lastModified++ = 0;
        for (int tried = 0; tried < count; tried++) {
            int i = (expected + tried) % count;
            if (strcmp(feeds[i].url, line) == 0) {
                feeds[i].etag = copyTrimmed(etag, strlen(etag));
                feeds[i].lastModified = copyTrimmed(lastModified, strlen(lastModified));
                expected = i + 1;
                break;
            }
        }
    }
    free(line);
    fclose(file);
}

static void writeState(const char *path, Feed *feeds, int count) {
    size_t length = strlen(path) + 5;
    char *temporary = malloc(length);
    if (!temporary) fail("out of memory", NULL);
    snprintf(temporary, length, "%s.new", path);
    FILE *file = fopen(temporary, "w");
    if (!file) fail("cannot write ", temporary);
    for (int i = 0; i < count; i++) {
        fprintf(file, "%s\t%s\t%s\n", feeds[i].url, feeds[i].etag ? feeds[i].etag : "", feeds[i].lastModified ? feeds[i].lastModified : "");
    }
    if (fclose(file) != 0 || rename(temporary, path) != 0) fail("cannot replace ", path);
    free(temporary);
}

int main(int argc, char **argv) {
    const char *urlsPath = NULL, *statePath = NULL, *storePath = NULL, *requestHeadersPath = NULL;
    long inFlight = 512, perHost = 6;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--urls") == 0) urlsPath = argv[i + 1];
        else if (strcmp(argv[i], "--state") == 0) statePath = argv[i + 1];
        else if (strcmp(argv[i], "--in-flight") == 0) inFlight = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--per-host") == 0) perHost = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--store") == 0) storePath = argv[i + 1];
        else if (strcmp(argv[i], "--request-headers") == 0) requestHeadersPath = argv[i + 1];
        else fail("unknown option ", argv[i]);
    }
    if (!urlsPath || !statePath || inFlight < 1 || perHost < 1) {
        fail("usage: fetchrun-curl-yardstick --urls FILE --state FILE [--in-flight N] [--per-host N] [--store DATABASE] [--request-headers FILE]", NULL);
    }
    keepsBodies = storePath != NULL;
    if (requestHeadersPath) readRequestHeaders(requestHeadersPath);

    FILE *urls = fopen(urlsPath, "r");
    if (!urls) fail("cannot read ", urlsPath);
    int count = 0, capacity = 1024;
    Feed *feeds = calloc(capacity, sizeof(Feed));
    char *line = NULL;
    size_t lineCapacity = 0;
    ssize_t length;
    while (feeds && (length = getline(&line, &lineCapacity, urls)) > 0) {
        char *url = copyTrimmed(line, (size_t)length);
        if (!*url) { free(url); continue; }
        if (count == capacity) {
            capacity *= 2;
            feeds = realloc(feeds, capacity * sizeof(Feed));
            if (feeds) memset(feeds + count, 0, (capacity - count) * sizeof(Feed));
        }
        if (feeds) feeds[count++].url = url;
    }
    if (!feeds) fail("out of memory", NULL);
    free(line);
    fclose(urls);
    readState(statePath, feeds, count);

    curl_global_init(CURL_GLOBAL_ALL);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, perHost);
    int next = 0, active = 0, done = 0;
    while (done < count) {
        for (; active < inFlight && next < count; next++, active++) {
            curl_multi_add_handle(multi, transfer(&feeds[next]));
        }
        int running = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int left = 0;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            Feed *feed = NULL;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&feed);
            if (message->data.result == CURLE_OK) curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &feed->status);
            if (keepsBodies && feed->status == 200) parseItems((int)(feed - feeds), feed);
            free(feed->body);
            feed->body = NULL;
            feed->size = feed->capacity = 0;
            curl_multi_remove_handle(multi, message->easy_handle);
            curl_easy_cleanup(message->easy_handle);
            active--;
            done++;
        }
        // A slot freed above is refilled before waiting: waiting first held the next sources
        // back until some other socket stirred — up to the next response, 100 ms later, which
        // made a run take a third round trip in about half the runs (or the poll's whole second
        // when the last transfers in flight had all just ended).
        int refill = active < inFlight && next < count;
        if (done < count && !refill) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    curl_multi_cleanup(multi);
    writeState(statePath, feeds, count);
    if (storePath) storeItems(storePath, feeds);

    int ok = 0, notModified = 0, other = 0;
    for (int i = 0; i < count; i++) {
        if (feeds[i].status == 200) ok++;
        else if (feeds[i].status == 304) notModified++;
        else other++;
    }
    printf("%d responses: %d 200, %d 304, %d other or failed", count, ok, notModified, other);
    if (storePath) printf("; %zu items stored", itemCount);
    printf("\n");
    return other == 0 ? 0 : 1;
}
