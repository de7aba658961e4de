import FetchRunCore
import CCurl
extension CurlHTTPClient {
    /// Performs a GET request and returns the final response, whatever its status.
    ///
    /// The request first waits for a slot on its host (``Configuration``: connections per
    /// host, HTTP/2 streams, `min_delay`, a host-wide back-off after a 429/503 with
    /// `Retry-After`). That wait is not the request's: its `deadline` moves by as much, and so
    /// does the deadline of the fetch it belongs to (``HTTPRequest/budget``). The response
    /// says how long it waited (``HTTPResponse/queueWait``).
    ///
    /// - Returns: the response after redirects. A 4xx or 5xx is a response, not an error.
    /// - Throws: ``HTTPError`` when no response could be had (network, TLS, redirect rules,
    ///   size cap, a URL that is not allowed, `queue_timeout` passed while waiting for the host,
    ///   the host backing off for longer than that); `CancellationError` when the calling task
    ///   is cancelled, or the client has stopped (see ``run()``).
    /// - Cancellation: a request waiting for its host leaves the queue at once; one in curl is
    ///   removed from curl at once and its connection closed; nothing keeps running.
    public func execute(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard let host = HTTPText.hostKey(of: request.url) else {
            // file: URLs use no connection, so no slot.
            var response = try await perform(request)
            response.receivedAt = clock.date
            return response
        }
        let fetchDeadline = request.budget
        fetchDeadline?.pause()
        // Measured here, not by the queue: a busy machine may take a while to run this task
        // again after its slot is granted, and that time is not the request's either.
        let waitStarted = clock.now
        let permit: HostScheduler.Permit
        do {
            permit = try await hosts.acquire(host: host, url: request.url, multiplexes: request.multiplexes && request.transport.version == .priorKnowledge)
            fetchDeadline?.resume(afterWaitingFor: host)
        } catch let refusal as HostScheduler.Refusal {
            fetchDeadline?.resume(afterWaitingFor: host)
            switch refusal {
            case .queueTimeout(let host, let waited):
                throw HTTPError(.queueTimeout, "waited \(DurationText.format(waited)) for a connection to \(host) (http.queue_timeout); not sent")
            case .backingOff(let host, let remaining, let status):
                throw HTTPError(.hostBackingOff(status: status), "\(host) answered \(status) with Retry-After; every request to it waits \(DurationText.format(remaining)) more; not sent", retryAfter: remaining)
            case .unreachable(let host, let failures, let skipped):
                throw HTTPError(.hostUnreachable, "\(host) is not answering (\(failures) requests in a row refused or unanswered); not sent, \(skipped == 1 ? "the first one skipped" : "as were \(skipped - 1) other requests to it")")
            }
        } catch {
            fetchDeadline?.resume(afterWaitingFor: host)
            throw error
        }
        // A slot granted at once is no wait, however long this task then took to run again.
        let waited = permit.waited == .zero ? .zero : clock.now - waitStarted
        var request = request
        request.deadline = request.deadline + waited
        let watch = TransferWatch()
        do {
            var response = try await perform(request, watch: watch)
            response.receivedAt = clock.date
            countResponse(response.status)
            let backoff = [429, 503].contains(response.status) ? response.retryAfter() : nil
            await hosts.release(permit, multiplexed: request.multiplexes && response.httpVersion == .http2, retryAfter: backoff, status: response.status)
            response.queueWait = waited
            return response
        } catch {
            await hosts.release(permit, multiplexed: false, retryAfter: nil, status: 0, answer: watch.answer(after: error, deadline: request.deadline, now: clock.now))
            throw error
        }
    }

}

/// The last transfer of a request, kept by ``CurlHTTPClient/execute(_:)`` to tell its host's
/// breaker whether the host answered. Used by the one task that runs the request.
private final class TransferWatch {
    var transfer: CurlTransfer?

    /// What a request that ended with `error` says about its host: silent when curl could not
    /// connect or heard nothing, or when the deadline cancelled it before one byte came.
    func answer(after error: any Error, deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) -> HostScheduler.Answer {
        if let error = error as? HTTPError { return error.hostWasSilent ? .silent : .unknown }
        // The deadline is enforced by cancellation; a cancellation well before it is the
        // run's (a signal), which says nothing about the host.
        if error is CancellationError, now >= deadline - .milliseconds(100), transfer?.receivedNothing == true {
            return .silent
        }
        return .unknown
    }
}

extension HTTPRequest {
    /// Whether its connection can carry other requests at once when it speaks HTTP/2.
    var multiplexes: Bool {
        transport.version != .priorKnowledge || CurlGlobal.reusesPriorKnowledgeConnections
    }
}

extension CurlHTTPClient {
    /// Hands the request to curl and waits for its end, following redirects: curl follows
    /// them itself unless the request carries what belongs to its own origin, then
    /// ``followingRedirects(_:watch:)`` walks the hops.
    private func perform(_ request: HTTPRequest, watch: TransferWatch? = nil) async throws -> HTTPResponse {
        guard request.followsRedirects, request.maxRedirects > 0, !request.originBound.isEmpty else {
            return try await performOnce(request, watch: watch)
        }
        return try await followingRedirects(request, watch: watch)
    }

    /// Follows redirects one hop at a time, so that every `headers:` entry (an `X-Api-Key` as
    /// much as an `Authorization`), the cookies and the username and password go to the
    /// request's own origin (scheme, host, port) only — curl alone would send custom headers
    /// anywhere a redirect points. A hop to another origin, or from https to http, goes
    /// without them; the response says what was held back.
    private func followingRedirects(_ request: HTTPRequest, watch: TransferWatch?) async throws -> HTTPResponse {
        let origin = HTTPText.origin(of: request.url)
        var hop = request
        hop.followsRedirects = false
        var redirects: [Int] = []
        var withheld: [String] = []
        let started = clock.now
        while true {
            var response = try await performOnce(hop, watch: watch)
            guard [301, 302, 303, 307, 308].contains(response.status), let target = response.redirectURL else {
                response.redirectCount = redirects.count
                response.redirectsWerePermanent = !redirects.isEmpty && redirects.allSatisfy { $0 == 301 || $0 == 308 }
                response.withheldAfterRedirect = withheld
                response.duration = clock.now - started
                return response
            }
            guard redirects.count < request.maxRedirects else {
                throw HTTPError(.redirect, "more than \(request.maxRedirects) redirects (last to \(TerminalText.safe(HTTPText.removingCredentials(from: target))))")
            }
            guard let targetOrigin = HTTPText.origin(of: target) else {
                throw HTTPError(.redirect, "redirect to a URL that is not http or https (\(TerminalText.safe(HTTPText.removingCredentials(from: target))))")
            }
            redirects.append(response.status)
            hop.url = target
            // A 303, and a 301 or 302 after a POST, is followed with a GET, as browsers do.
            if response.status == 303 || (hop.body != nil && response.status != 307 && response.status != 308) { hop.body = nil }
            if targetOrigin == origin {
                hop.headers = request.headers
                hop.transport = request.transport
            } else {
                withheld = request.originBound
                hop.headers = request.headers.filter { HTTPRequest.portableHeaders.contains($0.name.lowercased()) }
                hop.transport = request.transport.anonymous
            }
        }
    }

    /// One transfer, as configured.
    private func performOnce(_ request: HTTPRequest, watch: TransferWatch?) async throws -> HTTPResponse {
        let transfer = try CurlTransfer(request: request, timeLeft: request.deadline - clock.now)
        watch?.transfer = transfer
        if request.multiplexes, let host = HTTPText.hostKey(of: request.url) {
            transfer.hostKey = host
            transfer.multiplexSignal = loop.multiplexSignal
        }
        return try await run(transfer)
    }

    /// Hands a configured transfer to the curl loop and waits for its end. Cancelling the
    /// calling task removes it from curl at once (also before the loop has added it).
    func run(_ transfer: CurlTransfer) async throws -> HTTPResponse {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Set before the loop can see the transfer; the queue's lock publishes it.
                transfer.continuation = continuation
                loop.submit(.add(transfer))
            }
        } onCancel: {
            loop.submit(.cancel(transfer))
        }
    }
}

extension CurlHTTPClient {
    /// Sends a mail through SMTP (libcurl's `smtp://` / `smtps://`).
    ///
    /// - Returns: the server's last reply code (250 when the message was accepted).
    /// - Throws: ``HTTPError`` when the server could not be reached or refused the mail
    ///   (a login, a sender or a recipient it would not take); `CancellationError` when the
    ///   calling task is cancelled (the transfer is removed from curl at once).
    ///
    /// Not on the curl loop: a mail server that stops answering makes libcurl wait inside its
    /// state machine (for a reply, for the answer to QUIT), and there it would hold back every
    /// fetch of the process. On a thread of its own the wait costs that thread, ends at the
    /// mail's deadline, and — the calling task cancelled — within a second of the stop.
    public func send(_ mail: MailRequest) async throws -> Int {
        let transfer = try CurlTransfer(mail: mail, timeLeft: mail.deadline - clock.now)
        return try await runOffPool(name: "fetchrun-smtp") { stop in
            transfer.stop = stop
            transfer.started = .now
            return try transfer.result(curl_easy_perform(transfer.handle)).get().status
        }
    }
}
