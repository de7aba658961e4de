#ifndef FETCHRUN_CSQLITE_SHIM_H
#define FETCHRUN_CSQLITE_SHIM_H
// SQLite's API is plain C; only SQLITE_TRANSIENT, a cast macro, does not reach Swift.
#include <sqlite3.h>

// Binds text that SQLite copies at once (SQLITE_TRANSIENT): the Swift string may go away.
static inline int fetchrun_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}
#endif
