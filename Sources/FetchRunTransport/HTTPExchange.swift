import Foundation
import FetchRunCore
/// What sources and outputs ask of the network: a request answered, a mail sent.
///
/// ``CurlHTTPClient`` is the implementation fetchrun runs on. Adapters and outputs see only
/// this, so a test — or a program embedding the engine — can answer their requests itself and
/// look at what they send, without a server.
///
/// The contract is the curl client's:
/// - ``execute(_:)`` returns the final response after redirects, whatever its status (a 4xx or
///   5xx is a response, not an error), or throws ``HTTPError`` when no response could be had,
///   and `CancellationError` when the calling task is cancelled. It ends by the request's
///   `deadline` (moved by any wait for a slot on the host).
/// - ``send(_:)`` returns the SMTP server's last reply code once it took the mail, or throws
///   ``HTTPError``; every wait is bounded by the mail's `deadline`.
/// - ``now`` and ``date`` are the exchange's time: a request's `deadline` is an instant of
///   ``now``'s clock, and what a request stamps (a webhook's signature) reads ``date``. By
///   default the system's.
public protocol HTTPExchange: Sendable {
    func execute(_ request: HTTPRequest) async throws -> HTTPResponse
    func send(_ mail: MailRequest) async throws -> Int
    var now: ContinuousClock.Instant { get }
    var date: Date { get }
}

/// An exchange that keeps no time of its own runs on the system's.
extension HTTPExchange {
    public var now: ContinuousClock.Instant { SystemClock().now }
    public var date: Date { SystemClock().date }
}

extension CurlHTTPClient: HTTPExchange {
    public var now: ContinuousClock.Instant { clock.now }
    public var date: Date { clock.date }
}
