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
public protocol HTTPExchange: Sendable {
    func execute(_ request: HTTPRequest) async throws -> HTTPResponse
    func send(_ mail: MailRequest) async throws -> Int
}

extension CurlHTTPClient: HTTPExchange {}
