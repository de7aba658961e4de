import FetchRunCore
import CCurl
import Foundation

/// A download into a file: resumed by range, stalls judged by the time since the last byte,
/// the file's size checked against its limit.
extension CurlTransfer {
    func configure(_ request: DownloadRequest) throws {
        var headers = request.headers
        if let resume = request.resume {
            headers.insert(contentsOf: [("Range", "bytes=\(resume.offset)-"), ("If-Range", resume.validator)], at: 0)
        }
        try configureCommon(headers: headers, userAgent: request.userAgent, allowsFileURL: false, transport: request.transport)
        // No Accept-Encoding: enclosures are compressed already, and a range of an encoded
        // body is a range of the encoding, not of the file.
        set(CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout.milliseconds))
        // A stall is judged by the time since the last byte, in curl's progress callback:
        // curl's own LOW_SPEED limit averages over several seconds, so it fired five seconds
        // late. But a low-speed limit is what makes curl look at a silent transfer at all —
        // it then checks it, and calls the callback, once a second (the loop only hands curl
        // sockets that are ready) — so one is set that never fires first: 1 byte a second
        // for a day.
        set(CURLOPT_LOW_SPEED_LIMIT, 1)
        set(CURLOPT_LOW_SPEED_TIME, 86_400)
        set(CURLOPT_NOPROGRESS, 0)
        fetchrun_easy_setopt_xferinfo_callback(handle, CURLOPT_XFERINFOFUNCTION) { userData, _, _, _, _ in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            guard let download = transfer.download else { return 0 }
            let now = ContinuousClock.now
            let last = transfer.lastActivity ?? transfer.started ?? now
            if transfer.lastActivity == nil { transfer.lastActivity = last }
            guard now - last > download.request.stallTimeout else { return 0 }
            transfer.stalled = true
            return 1
        }
        set(CURLOPT_XFERINFODATA, pointer: Unmanaged.passUnretained(self).toOpaque())
        set(CURLOPT_MAXFILESIZE_LARGE, offset: curl_off_t(request.maxBytes))
        if let rate = request.maxBytesPerSecond {
            // curl checks the rate between reads, and reads up to 100 buffers in one go while
            // the socket has data: a small buffer keeps a fast server within the cap.
            set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: curl_off_t(rate))
            set(CURLOPT_BUFFERSIZE, 16 * 1024)
        } else {
            // Bigger reads mean fewer write(2) calls per megabyte.
            set(CURLOPT_BUFFERSIZE, 512 * 1024)
        }
    }

    /// A download's body bytes: the first ones decide what happens to the file.
    func receiveDownloadBytes(_ bytes: UnsafeRawBufferPointer, file: DownloadFile, request: DownloadRequest) -> Bool {
        if file.decision == nil {
            var status = 0
            fetchrun_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
            guard file.decide(status: status, headers: headers, resumeOffset: request.resume?.offset, resumeValidator: request.resume?.validator) else { return false }
        }
        return file.write(bytes, maxBytes: request.maxBytes)
    }

    /// The whole file's size as the server announced it: from the response head kept by the
    /// file, else (curl refused before the body began) from the headers received:
    /// `Content-Range`'s total, or `Content-Length`.
    func announcedSize(of download: (file: DownloadFile, request: DownloadRequest)) -> Int64? {
        if let size = download.file.responseHead?.announcedSize, size > 0 { return size }
        if let total = headers["content-range"].flatMap(ContentRange.init)?.total, total > 0 { return total }
        guard let length = headers["content-length"].flatMap({ Int64($0) }), length > 0 else { return nil }
        return length
    }
}
