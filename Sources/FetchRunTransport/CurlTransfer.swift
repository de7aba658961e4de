import FetchRunCore
import CCurl
import Foundation

/// One request's curl easy handle and everything its callbacks write into.
///
/// Thread confinement, not locks, keeps it safe: the submitting task configures it before
/// handing it to the loop; from then on only the loop thread (and curl's callbacks, which run
/// on that thread inside `curl_multi_socket_action`) touches it.
final class CurlTransfer: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    let url: String
    let maxRedirects: Int
    /// Memory bodies only: the most bytes kept.
    let maxBodyBytes: Int
    /// Past ``maxBodyBytes`` the body is cut and the transfer ends with the response so far
    /// (``HTTPRequest/cutsLongBody``), rather than failing.
    var cutsLongBody = false
    /// The host as the per-host queue counts it, for feed requests; `nil` for downloads.
    var hostKey: String?
    /// Where a reused connection is reported (``MultiplexSignal``); loop-thread state.
    var multiplexSignal: MultiplexSignal?
    /// Set for downloads: the body goes to this file instead of ``body``.
    let download: (file: DownloadFile, request: DownloadRequest)?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    var recipientList: UnsafeMutablePointer<curl_slist>?
    /// A mail's bytes, read by curl's read callback from `uploadOffset` on.
    var upload = Data()
    var uploadOffset = 0
    /// curl writes its detailed message here; it must stay at one address for the handle's life.
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    var continuation: CheckedContinuation<HTTPResponse, any Error>?
    var body = Data()
    var headers: [String: String] = [:]
    var bodyTooLarge = false
    /// The status of every response in the redirect chain, the final one last.
    var hopStatuses: [Int] = []
    /// A cancel arrived before the loop added the transfer.
    var cancelRequested = false
    /// Its continuation has been resumed; later commands for it are ignored.
    var finished = false
    var started: ContinuousClock.Instant?
    /// Downloads: when bytes last arrived (headers or body), and whether the stall limit ended it.
    var lastActivity: ContinuousClock.Instant?
    var stalled = false
    /// A mail's deadline, and the flag that stops it: its transfer runs on a thread of its own
    /// (``CurlHTTPClient/send(_:)``), whose progress callback reads both.
    var mailDeadline: ContinuousClock.Instant?
    var stop: CancellationFlag?
    var passedDeadline = false

    /// Creates and configures the easy handle for a request whose body is kept in memory, with
    /// `timeLeft` before its deadline: from here libcurl counts it down in real time.
    /// - Throws: ``HTTPError`` for a URL curl will not take.
    init(request: HTTPRequest, timeLeft: Duration) throws {
        guard let handle = curl_easy_init() else { throw HTTPError(.network, "cannot create a curl handle") }
        self.handle = handle
        url = request.url
        maxRedirects = request.maxRedirects
        maxBodyBytes = request.maxBodyBytes
        cutsLongBody = request.cutsLongBody
        download = nil
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try configure(request, timeLeft: timeLeft)
    }

    /// Creates and configures the easy handle for a download into `file`.
    /// - Throws: ``HTTPError`` for a URL curl will not take.
    init(download request: DownloadRequest, into file: DownloadFile) throws {
        guard let handle = curl_easy_init() else { throw HTTPError(.network, "cannot create a curl handle") }
        self.handle = handle
        url = request.url
        maxRedirects = request.maxRedirects
        maxBodyBytes = 0
        download = (file, request)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try configure(request)
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        curl_slist_free_all(recipientList)
        errorBuffer.deallocate()
    }

    /// Creates and configures the easy handle for a mail sent through SMTP, with `timeLeft`
    /// before its deadline (counted down in real time from here, as for a request).
    /// - Throws: ``HTTPError`` for a URL or address curl will not take.
    init(mail: MailRequest, timeLeft: Duration) throws {
        guard let handle = curl_easy_init() else { throw HTTPError(.network, "cannot create a curl handle") }
        self.handle = handle
        url = mail.url
        maxRedirects = 0
        maxBodyBytes = 64 * 1024
        download = nil
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        try configure(mail, timeLeft: timeLeft)
    }

    func configureCommon(headers: [(name: String, value: String)], userAgent: String, allowsFileURL: Bool, transport: HTTPTransport, followsRedirects: Bool = true) throws {
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_URL, InternationalHost.asciiURL(url))
        set(CURLOPT_PRIVATE, pointer: unmanaged)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        // Only http and https, also after redirects; file: only when the config names a file.
        try set(CURLOPT_PROTOCOLS_STR, allowsFileURL ? "file" : "http,https")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        set(CURLOPT_FOLLOWLOCATION, followsRedirects ? 1 : 0)
        set(CURLOPT_MAXREDIRS, maxRedirects)
        try set(CURLOPT_USERAGENT, userAgent)
        try configure(transport)

        for header in headers {
            // The config loader refuses these already; an embedding program might not.
            guard HTTPText.isHeaderName(header.name), HTTPText.controlCharacterProblem(header.value) == nil else {
                throw HTTPError(.invalidURL, "header '\(TerminalText.safe(header.name))' is not a valid name or its value holds a control character; not sent")
            }
            headerList = curl_slist_append(headerList, "\(header.name): \(header.value)")
        }
        guard HTTPText.controlCharacterProblem(userAgent) == nil else {
            throw HTTPError(.invalidURL, "the User-Agent holds a control character; not sent")
        }
        if let headerList { fetchrun_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList) }

        fetchrun_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, userData in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            let length = size * count
            if let download = transfer.download {
                transfer.lastActivity = .now
                return transfer.receiveDownloadBytes(UnsafeRawBufferPointer(start: data, count: length), file: download.file, request: download.request) ? length : 0
            }
            guard transfer.body.count + length <= transfer.maxBodyBytes else {
                if transfer.cutsLongBody, let data {
                    transfer.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: transfer.maxBodyBytes - transfer.body.count)
                }
                transfer.bodyTooLarge = true
                return 0 // anything but `length` makes curl stop with CURLE_WRITE_ERROR
            }
            if transfer.body.isEmpty { transfer.reserveBody() }
            if let data { transfer.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length) }
            return length
        }
        set(CURLOPT_WRITEDATA, pointer: unmanaged)
        fetchrun_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, userData in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            let length = size * count
            if transfer.download != nil { transfer.lastActivity = .now }
            if let data { transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length)) }
            return length
        }
        set(CURLOPT_HEADERDATA, pointer: unmanaged)
    }

    /// Room for the whole body when the response says how long it is: appended chunk by chunk,
    /// a 40 KB feed was allocated, copied and grown again on the loop thread. At most 256 KiB
    /// (and never past the body limit), so that a length that lies — hundreds of sources
    /// announcing large bodies and sending nothing — reserves little more than what is sent;
    /// a larger body grows from there as before.
    private func reserveBody() {
        var length: curl_off_t = -1
        guard fetchrun_easy_getinfo_off_t(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK, length > 0 else { return }
        body = Data(capacity: Int(min(length, curl_off_t(min(maxBodyBytes, 256 << 10)))))
    }

    func configure(_ transport: HTTPTransport) throws {
        switch transport.version {
        case .auto: set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        case .priorKnowledge: set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        case .http1: set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        }
        if let proxy = transport.proxy {
            try set(CURLOPT_PROXY, proxy)
            // A proxy named in the config is bypassed for the config's no_proxy only, not the
            // environment's, which was written for the environment's proxy.
            try set(CURLOPT_NOPROXY, transport.noProxy ?? "")
        } else if let noProxy = transport.noProxy {
            try set(CURLOPT_NOPROXY, noProxy)
        }
        if let caFile = transport.caFile { try set(CURLOPT_CAINFO, caFile) }
        if transport.insecure {
            set(CURLOPT_SSL_VERIFYPEER, 0)
            set(CURLOPT_SSL_VERIFYHOST, 0)
            set(CURLOPT_PROXY_SSL_VERIFYPEER, 0)
            set(CURLOPT_PROXY_SSL_VERIFYHOST, 0)
        }
        if let username = transport.username {
            try set(CURLOPT_USERNAME, username)
            try set(CURLOPT_PASSWORD, transport.password ?? "")
            set(CURLOPT_HTTPAUTH, fetchrun_auth_basic)
        }
        if let cookies = transport.cookieHeader {
            guard HTTPText.controlCharacterProblem(cookies) == nil else {
                throw HTTPError(.invalidURL, "a cookie holds a control character; not sent")
            }
            try set(CURLOPT_COOKIE, cookies)
        }
    }

    /// Keeps the headers of the last response only: a redirect's headers are dropped when the
    /// next status line arrives.
    /// One header line as curl hands it over, `\r\n` included. Read by bytes: it runs for every
    /// header of every response, and Foundation's trimming bridged each line to an NSString.
    private func receiveHeaderLine(_ line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            headers.removeAll()
            // "HTTP/1.1 301 Moved Permanently", "HTTP/2 308"
            let fields = String(decoding: line, as: UTF8.self).split(separator: " ", maxSplits: 2)
            if fields.count >= 2, let status = Int(fields[1].prefix(3)) { hopStatuses.append(status) }
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        // Optional whitespace around a field (RFC 9110: spaces and tabs), and the line's end.
        func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
            let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
            guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return bytes[bytes.startIndex..<bytes.startIndex] }
            return bytes[first...last]
        }
        let name = String(decoding: trimmed(line[..<colon]), as: UTF8.self).lowercased()
        var value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
        if name == "location" || name == "content-location" { value = HTTPText.removingCredentials(from: value) }
        // Lines of one name join with ", " (RFC 9110). Appended in place: building a new string
        // per line made a response of 50,000 `X: a` lines (300 KB, within curl's limit) cost
        // the curl thread, and every transfer on it, half a second.
        if let index = headers.index(forKey: name) {
            headers.values[index].append(", ")
            headers.values[index].append(value)
        } else {
            headers[name] = value
        }
    }

    /// Not one byte of a response has come (no status line, no body): what a host that
    /// accepts connections and never answers gives.
    var receivedNothing: Bool {
        hopStatuses.isEmpty && body.isEmpty
    }

    /// The response, or the error that ended the transfer, once curl reports it done.
    func result(_ code: CURLcode) -> Result<HTTPResponse, any Error> {
        let duration = started.map { .now - $0 } ?? .zero
        // A cut body ended the transfer on purpose: the response so far is the answer.
        guard code == CURLE_OK || (cutsLongBody && bodyTooLarge && code == CURLE_WRITE_ERROR) else { return .failure(error(for: code)) }
        var status = 0
        fetchrun_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var redirects = 0
        fetchrun_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &redirects)
        var effective: UnsafeMutablePointer<CChar>?
        fetchrun_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &effective)
        var version = 0
        fetchrun_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        // 1xx interim responses (100 Continue) are not hops; only redirects before the final one.
        let redirectStatuses = hopStatuses.dropLast().filter { $0 >= 300 }
        var redirectURL: UnsafeMutablePointer<CChar>?
        fetchrun_easy_getinfo_string(handle, CURLINFO_REDIRECT_URL, &redirectURL)
        var response = HTTPResponse(
            status: status, headers: headers, body: body,
            // Credentials written into the URL stay in the HTTP layer: this URL becomes the
            // base of the feed's relative links, which are stored and printed.
            effectiveURL: HTTPText.removingCredentials(from: effective.map { String(cString: $0) } ?? url),
            redirectCount: redirects, duration: duration,
            httpVersion: version == Int(CURL_HTTP_VERSION_2_0) ? .http2 : version == 0 ? .none : .http1,
            redirectsWerePermanent: !redirectStatuses.isEmpty && redirectStatuses.allSatisfy { $0 == 301 || $0 == 308 }
        )
        response.redirectURL = redirectURL.map { String(cString: $0) }
        return .success(response)
    }

    private func error(for code: CURLcode) -> HTTPError {
        let detail = String(cString: errorBuffer)
        let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if let download {
            if download.file.overLimit || code == CURLE_FILESIZE_EXCEEDED {
                let limit = ByteSizeText.format(download.request.maxBytes)
                guard let size = announcedSize(of: download) else {
                    return HTTPError(.bodyTooLarge, "the file is larger than max_size (\(limit))")
                }
                return HTTPError(.bodyTooLarge, "the file is \(ByteSizeText.format(size)), larger than max_size (\(limit))")
            }
            if let failure = download.file.writeFailure ?? download.file.validatorMismatch {
                return HTTPError(.network, failure)
            }
            if stalled {
                return HTTPError(.network, "stalled: no data for \(DurationText.format(download.request.stallTimeout)) (stall_timeout)")
            }
        }
        if bodyTooLarge || code == CURLE_FILESIZE_EXCEEDED {
            return HTTPError(.bodyTooLarge, "response body larger than the \(Self.byteCount(maxBodyBytes)) limit (max_bytes)")
        }
        if passedDeadline, let deadline = mailDeadline, let started {
            return HTTPError(.network, "no answer within the output's timeout (\(DurationText.format(deadline - started)))")
        }
        switch code {
        case CURLE_COULDNT_CONNECT:
            var error = HTTPError(.network, reason)
            error.hostWasSilent = true
            return error
        case CURLE_OPERATION_TIMEDOUT:
            var error = HTTPError(.network, reason)
            error.hostWasSilent = receivedNothing
            return error
        case CURLE_TOO_MANY_REDIRECTS:
            return HTTPError(.redirect, "more than \(maxRedirects) redirects (\(reason))")
        case CURLE_UNSUPPORTED_PROTOCOL:
            var redirects = 0
            fetchrun_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &redirects)
            return redirects > 0 || reason.lowercased().contains("redirect")
                ? HTTPError(.redirect, "redirect to a URL that is not http or https (\(reason))")
                : HTTPError(.invalidURL, "only http and https URLs can be fetched (\(reason))")
        case CURLE_URL_MALFORMAT:
            return HTTPError(.invalidURL, "malformed URL (\(reason))")
        case CURLE_PEER_FAILED_VERIFICATION:
            return HTTPError(.tls, "TLS: the server's certificate is not trusted (\(reason)); set 'ca_file' to the certificate authority that signed it, or 'insecure: true' to skip the check")
        case CURLE_SSL_CACERT_BADFILE:
            return HTTPError(.tls, "TLS: cannot use 'ca_file' (\(reason))")
        case CURLE_SSL_CONNECT_ERROR:
            return HTTPError(.tls, "TLS handshake failed (\(reason))")
        case CURLE_USE_SSL_FAILED:
            return HTTPError(.tls, "the mail server did not offer STARTTLS or refused it (\(reason)): nothing was sent in cleartext; a local relay without TLS needs 'starttls: off'")
        case CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPError(.network, "cannot resolve the proxy (\(HTTPText.removingCredentials(from: reason)))")
        case CURLE_OUT_OF_MEMORY:
            // libcurl 7.88 reports a header line past its 100 KB limit (CURL_MAX_HTTP_HEADER)
            // as "Out of memory"; a real shortage of memory would have stopped fetchrun first.
            return HTTPError(.network, "the response has a header line longer than the 100 KB libcurl accepts; refused")
        default:
            return HTTPError(.network, reason)
        }
    }

    static func byteCount(_ bytes: Int) -> String {
        bytes % (1024 * 1024) == 0 ? "\(bytes / 1024 / 1024) MiB" : bytes % 1024 == 0 ? "\(bytes / 1024) KiB" : "\(bytes)-byte"
    }

    // Typed setters over the shim's wrappers; a failing option is a programming error, except the URL's.
    func set(_ option: CURLoption, _ value: Int) {
        fetchrun_easy_setopt_long(handle, option, value)
    }

    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) {
        fetchrun_easy_setopt_pointer(handle, option, pointer)
    }

    func set(_ option: CURLoption, offset: curl_off_t) {
        fetchrun_easy_setopt_off_t(handle, option, offset)
    }

    func set(_ option: CURLoption, _ value: String) throws {
        let code = fetchrun_easy_setopt_string(handle, option, value)
        guard code == CURLE_OK else {
            throw HTTPError(.invalidURL, "\(String(cString: curl_easy_strerror(code)))")
        }
    }
}
