import CCurl
import Foundation

/// One request's curl easy handle and everything its callbacks write into.
///
/// Thread confinement, not locks, keeps it safe: the submitting task configures it before
/// handing it to the loop; from then on only the loop thread (and curl's callbacks, which run
/// on that thread inside `curl_multi_perform`) touches it.
final class CurlTransfer: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    let request: HTTPRequest
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// curl writes its detailed message here; it must stay at one address for the handle's life.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    var continuation: CheckedContinuation<HTTPResponse, any Error>?
    var body = Data()
    var headers: [String: String] = [:]
    var bodyTooLarge = false
    /// A cancel arrived before the loop added the transfer.
    var cancelRequested = false
    /// Its continuation has been resumed; later commands for it are ignored.
    var finished = false
    var started: ContinuousClock.Instant?

    /// Creates and configures the easy handle.
    /// - Throws: ``HTTPError`` for a URL curl will not take.
    init(request: HTTPRequest) throws {
        guard let handle = curl_easy_init() else { throw HTTPError(.network, "cannot create a curl handle") }
        self.handle = handle
        self.request = request
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try configure()
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    private func configure() throws {
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_URL, request.url)
        set(CURLOPT_PRIVATE, pointer: unmanaged)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        // Only http and https, also after redirects; file: only when the config names a file.
        try set(CURLOPT_PROTOCOLS_STR, request.allowsFileURL ? "file" : "http,https")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        set(CURLOPT_FOLLOWLOCATION, 1)
        set(CURLOPT_MAXREDIRS, request.maxRedirects)
        // "" offers every decoder this libcurl was built with (gzip, deflate, br, zstd).
        try set(CURLOPT_ACCEPT_ENCODING, "")
        try set(CURLOPT_USERAGENT, request.userAgent)
        // Over https, wait for a connection being set up to say (by ALPN) whether it speaks
        // HTTP/2 and can carry this transfer too, rather than opening another. Never over plain
        // http: there the answer only comes with the response, and a hanging response would
        // hold back every other transfer to that host.
        if request.url.lowercased().hasPrefix("https:") { set(CURLOPT_PIPEWAIT, 1) }
        set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        // curl's own limits sit inside the deadline; the deadline itself is enforced by cancellation.
        let remaining = max(.milliseconds(1), request.deadline - .now)
        set(CURLOPT_TIMEOUT_MS, Int(remaining.milliseconds) + 50)
        set(CURLOPT_CONNECTTIMEOUT_MS, Int(min(remaining, request.connectTimeout).milliseconds) + 1)
        set(CURLOPT_MAXFILESIZE_LARGE, offset: curl_off_t(request.maxBodyBytes))

        for header in request.headers {
            headerList = curl_slist_append(headerList, "\(header.name): \(header.value)")
        }
        if let headerList { fetchrun_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList) }

        fetchrun_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, userData in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            let length = size * count
            guard transfer.body.count + length <= transfer.request.maxBodyBytes else {
                transfer.bodyTooLarge = true
                return 0 // anything but `length` makes curl stop with CURLE_WRITE_ERROR
            }
            if let data { transfer.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length) }
            return length
        }
        set(CURLOPT_WRITEDATA, pointer: unmanaged)
        fetchrun_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, userData in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            let length = size * count
            if let data {
                transfer.receiveHeaderLine(String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self))
            }
            return length
        }
        set(CURLOPT_HEADERDATA, pointer: unmanaged)
    }

    /// Keeps the headers of the last response only: a redirect's headers are dropped when the
    /// next status line arrives.
    private func receiveHeaderLine(_ line: String) {
        if line.hasPrefix("HTTP/") {
            headers.removeAll()
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        if let existing = headers[name] {
            headers[name] = existing + ", " + value
        } else {
            headers[name] = value
        }
    }

    /// The response, or the error that ended the transfer, once curl reports it done.
    func result(_ code: CURLcode) -> Result<HTTPResponse, any Error> {
        let duration = started.map { .now - $0 } ?? .zero
        guard code == CURLE_OK else { return .failure(error(for: code)) }
        var status = 0
        fetchrun_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var redirects = 0
        fetchrun_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &redirects)
        var effective: UnsafeMutablePointer<CChar>?
        fetchrun_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &effective)
        return .success(HTTPResponse(
            status: status, headers: headers, body: body,
            effectiveURL: effective.map { String(cString: $0) } ?? request.url,
            redirectCount: redirects, duration: duration
        ))
    }

    private func error(for code: CURLcode) -> HTTPError {
        let detail = String(cString: errorBuffer)
        let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if bodyTooLarge || code == CURLE_FILESIZE_EXCEEDED {
            return HTTPError(.bodyTooLarge, "response body larger than the \(Self.byteCount(request.maxBodyBytes)) limit (max_bytes)")
        }
        switch code {
        case CURLE_TOO_MANY_REDIRECTS:
            return HTTPError(.redirect, "more than \(request.maxRedirects) redirects (\(reason))")
        case CURLE_UNSUPPORTED_PROTOCOL:
            var redirects = 0
            fetchrun_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &redirects)
            return redirects > 0 || reason.lowercased().contains("redirect")
                ? HTTPError(.redirect, "redirect to a URL that is not http or https (\(reason))")
                : HTTPError(.invalidURL, "only http and https URLs can be fetched (\(reason))")
        case CURLE_URL_MALFORMAT:
            return HTTPError(.invalidURL, "malformed URL (\(reason))")
        default:
            return HTTPError(.network, reason)
        }
    }

    static func byteCount(_ bytes: Int) -> String {
        bytes % (1024 * 1024) == 0 ? "\(bytes / 1024 / 1024) MiB" : bytes % 1024 == 0 ? "\(bytes / 1024) KiB" : "\(bytes)-byte"
    }

    // Typed setters over the shim's wrappers; a failing option is a programming error, except the URL's.
    private func set(_ option: CURLoption, _ value: Int) {
        fetchrun_easy_setopt_long(handle, option, value)
    }

    private func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) {
        fetchrun_easy_setopt_pointer(handle, option, pointer)
    }

    private func set(_ option: CURLoption, offset: curl_off_t) {
        fetchrun_easy_setopt_off_t(handle, option, offset)
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        let code = fetchrun_easy_setopt_string(handle, option, value)
        guard code == CURLE_OK else {
            throw HTTPError(.invalidURL, "\(String(cString: curl_easy_strerror(code)))")
        }
    }
}
