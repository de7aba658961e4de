import FetchRunCore
import CCurl
import Foundation

/// A mail sent through SMTP: the envelope, the message read by curl's read callback, and the
/// waits of a server that stops answering bounded by the mail's deadline.
extension CurlTransfer {
    func configure(_ mail: MailRequest, timeLeft: Duration) throws {
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        try set(CURLOPT_URL, mail.url)
        set(CURLOPT_PRIVATE, pointer: unmanaged)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try set(CURLOPT_PROTOCOLS_STR, "smtp,smtps")
        try configure(mail.transport)
        // smtp:// must upgrade with STARTTLS before AUTH or the message (libcurl fails the
        // transfer when the server does not offer it or refuses it), unless the config opted
        // out for a local relay; smtps:// is TLS throughout.
        set(CURLOPT_USE_SSL, Int((mail.requiresTLS ? CURLUSESSL_ALL : CURLUSESSL_NONE).rawValue))
        if let username = mail.username {
            try set(CURLOPT_USERNAME, username)
            try set(CURLOPT_PASSWORD, mail.password ?? "")
        }
        try set(CURLOPT_MAIL_FROM, "<\(mail.from)>")
        for recipient in mail.recipients { recipientList = curl_slist_append(recipientList, "<\(recipient)>") }
        if let recipientList { fetchrun_easy_setopt_slist(handle, CURLOPT_MAIL_RCPT, recipientList) }
        upload = mail.message
        set(CURLOPT_UPLOAD, 1)
        set(CURLOPT_INFILESIZE_LARGE, offset: curl_off_t(upload.count))
        fetchrun_easy_setopt_write_callback(handle, CURLOPT_READFUNCTION) { buffer, size, count, userData in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            let room = size * count
            let left = transfer.upload.count - transfer.uploadOffset
            let length = min(room, left)
            guard length > 0, let buffer else { return 0 }
            transfer.upload.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + transfer.uploadOffset, byteCount: length)
            }
            transfer.uploadOffset += length
            return length
        }
        set(CURLOPT_READDATA, pointer: unmanaged)
        let remaining = max(.milliseconds(1), timeLeft)
        set(CURLOPT_TIMEOUT_MS, Int(remaining.milliseconds) + 50)
        set(CURLOPT_CONNECTTIMEOUT_MS, Int(min(remaining, .seconds(10)).milliseconds) + 1)
        // libcurl says goodbye (QUIT) when it closes an SMTP connection and waits for the answer
        // with its server-response timeout, 120 s by default, whatever TIMEOUT_MS says: kept in
        // the connection cache, a connection did so as the program ended, and a server that
        // never answered held the run two minutes. Closed at the end of its transfer instead,
        // its goodbye is waited for within the output's timeout, and the progress callback,
        // called once a second while curl waits, ends it at the deadline or a stop.
        set(CURLOPT_FORBID_REUSE, 1)
        set(CURLOPT_SERVER_RESPONSE_TIMEOUT, max(1, Int((Double(remaining.milliseconds) / 1000).rounded(.up))))
        // The deadline in libcurl's time: its progress callback reads the real clock.
        mailDeadline = .now + remaining
        set(CURLOPT_NOPROGRESS, 0)
        fetchrun_easy_setopt_xferinfo_callback(handle, CURLOPT_XFERINFOFUNCTION) { userData, _, _, _, _ in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(userData!).takeUnretainedValue()
            if transfer.stop?.isCancelled == true { return 1 }
            if let deadline = transfer.mailDeadline, ContinuousClock.now > deadline {
                transfer.passedDeadline = true
                return 1
            }
            return 0
        }
        set(CURLOPT_XFERINFODATA, pointer: unmanaged)
    }
}
