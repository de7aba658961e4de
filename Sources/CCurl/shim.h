#ifndef FETCHRUN_CCURL_SHIM_H
#define FETCHRUN_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are C variadics, which Swift
// cannot call. One typed wrapper per argument shape makes them callable.

static inline CURLcode fetchrun_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode fetchrun_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode fetchrun_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode fetchrun_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode fetchrun_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode fetchrun_easy_setopt_write_callback(CURL *handle, CURLoption option,
        size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, option, callback);
}
static inline CURLcode fetchrun_easy_setopt_xferinfo_callback(CURL *handle, CURLoption option,
        int (*callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(handle, option, callback);
}
static inline CURLcode fetchrun_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode fetchrun_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode fetchrun_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode fetchrun_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode fetchrun_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLMcode fetchrun_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}
typedef int (*fetchrun_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *userp, void *socketp);
static inline CURLMcode fetchrun_multi_setopt_socket_callback(CURLM *handle, fetchrun_socket_callback callback) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, callback);
}
typedef int (*fetchrun_timer_callback)(CURLM *multi, long timeout_ms, void *userp);
static inline CURLMcode fetchrun_multi_setopt_timer_callback(CURLM *handle, fetchrun_timer_callback callback) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, callback);
}
// CURL_SOCKET_TIMEOUT names another macro, which Swift does not import.
static const curl_socket_t fetchrun_socket_timeout = CURL_SOCKET_TIMEOUT;
typedef int (*fetchrun_prereq_callback)(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port, int conn_local_port);
static inline CURLcode fetchrun_easy_setopt_prereq_callback(CURL *handle, fetchrun_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}
// CURLAUTH_* are macros with casts, which Swift does not import.
static const long fetchrun_auth_basic = (long)CURLAUTH_BASIC;
// CURLVERSION_NOW is a macro naming the age this header was written for.
static const CURLversion fetchrun_version_now = CURLVERSION_NOW;
#endif
