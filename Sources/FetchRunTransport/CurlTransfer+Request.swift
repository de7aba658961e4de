import FetchRunCore
import CCurl
import Foundation

/// A request whose body is kept in memory: a feed, a page, an API, a notification.
extension CurlTransfer {
    func configure(_ request: HTTPRequest, timeLeft: Duration) throws {
        try configureCommon(headers: request.headers, userAgent: request.userAgent, allowsFileURL: request.allowsFileURL, transport: request.transport, followsRedirects: request.followsRedirects)
        if let body = request.body {
            set(CURLOPT_POST, 1)
            set(CURLOPT_POSTFIELDSIZE_LARGE, offset: curl_off_t(body.count))
            // COPYPOSTFIELDS copies the bytes now: nothing of ours has to outlive the call.
            _ = body.withUnsafeBytes { bytes in
                fetchrun_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
            if let method = request.bodyMethod { try set(CURLOPT_CUSTOMREQUEST, method) }
        }
        // "" offers every decoder this libcurl was built with (gzip, deflate, br, zstd).
        try set(CURLOPT_ACCEPT_ENCODING, "")
        // Over https, wait for a connection being set up to say (by ALPN) whether it speaks
        // HTTP/2 and can carry this transfer too, rather than opening another. Never over plain
        // http: there the answer only comes with the response, and a hanging response would
        // hold back every other transfer to that host.
        if request.url.lowercased().hasPrefix("https:") { set(CURLOPT_PIPEWAIT, 1) }
        if request.transport.version == .priorKnowledge {
            if CurlGlobal.reusesPriorKnowledgeConnections {
                set(CURLOPT_PIPEWAIT, 1)
            } else {
                // This libcurl breaks a prior-knowledge connection's second request: one each.
                set(CURLOPT_FORBID_REUSE, 1)
            }
        }
        // curl's own limits sit inside the deadline; the deadline itself is enforced by cancellation.
        let remaining = max(.milliseconds(1), timeLeft)
        set(CURLOPT_TIMEOUT_MS, Int(remaining.milliseconds) + 50)
        set(CURLOPT_CONNECTTIMEOUT_MS, Int(min(remaining, request.connectTimeout).milliseconds) + 1)
        if !request.cutsLongBody { set(CURLOPT_MAXFILESIZE_LARGE, offset: curl_off_t(request.maxBodyBytes)) }
        // Called on the loop thread once a connection is ready, right before the request is sent.
        fetchrun_easy_setopt_prereq_callback(handle) { clientp, _, _, _, _ in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(clientp!).takeUnretainedValue()
            var connects = 0
            fetchrun_easy_getinfo_long(transfer.handle, CURLINFO_NUM_CONNECTS, &connects)
            if connects == 0, let host = transfer.hostKey { transfer.multiplexSignal?.connectionReused(for: host) }
            return Int32(CURL_PREREQFUNC_OK)
        }
        set(CURLOPT_PREREQDATA, pointer: Unmanaged.passUnretained(self).toOpaque())
    }
}
