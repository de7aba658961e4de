/// Where deliveries go: a command, a webhook, a mailbox.
///
/// The contract of `send(_:)`:
/// - It sends every delivery it is given (at most ``batchSize``) and returns only when the
///   destination accepted all of them: the caller then marks them sent. Throwing means none
///   counts as sent; they are tried again later, all of them, so a destination may see one
///   twice and should deduplicate by ``Delivery/id``.
/// - Cancellation: the attempt stops promptly (the command's process group is killed, the
///   transfer is removed) and throws; the deliveries stay pending.
public protocol Output: Sendable {
    /// How many deliveries one ``send(_:)`` takes at most.
    var batchSize: Int { get }

    /// - Throws: ``OutputError`` saying why the destination did not take them.
    func send(_ deliveries: [Delivery]) async throws
}

/// Why an output did not take a delivery, in words for `fetchrun outputs`.
public struct OutputError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

extension OutputConfig {
    /// The output this entry describes, sending through `http` (webhooks and mail).
    public func makeOutput(http: HTTPClient) -> any Output {
        switch destination {
        case .command(let executable, let arguments, let perItem):
            return CommandOutput(executable: executable, arguments: arguments, perItem: perItem, timeout: timeout)
        case .webhook(let url, let headers, let batch, let transport):
            return WebhookOutput(url: url, headers: headers, batchSize: batch, template: template, transport: transport, timeout: timeout, http: http)
        case .email(let settings):
            return EmailOutput(settings: settings, template: template, timeout: timeout, http: http)
        }
    }
}
