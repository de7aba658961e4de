/// Where deliveries go: a command, a webhook, a mailbox — or an embedding program's own.
///
/// The contract of ``send(_:through:)``:
/// - It sends every delivery it is given (at most ``batchSize``) and returns only when the
///   destination accepted all of them: the caller then marks them sent. Throwing means none
///   counts as sent; they are tried again later, so a destination may see one twice and
///   should deduplicate by ``Delivery/id``. An ``OutputError`` with scope
///   ``OutputError/Scope/deliveries`` says the destination refused these in particular: the
///   sender then tries each alone, so one bad delivery does not hold the others.
/// - It ends within the output's own time limit (its `timeout`).
/// - Cancellation: the attempt stops promptly (a command's process group is killed, a transfer
///   is removed) and throws; the deliveries stay pending.
public protocol Output: Sendable {
    /// How many deliveries one ``send(_:through:)`` takes at most.
    var batchSize: Int { get }
    /// What it sends to, for listings: the program, the URL as the config writes it with any
    /// credentials removed, the recipients. Never a secret.
    var target: String { get }

    /// - Parameter http: the process's HTTP client, for outputs that speak HTTP or SMTP.
    /// - Throws: ``OutputError`` saying why the destination did not take them.
    func send(_ deliveries: [Delivery], through http: any HTTPExchange) async throws
}

/// An output a config file can name: the `type:` that selects it, the keys it reads, and how
/// it is made from them. The ``OutputRegistry`` holds these.
///
/// `init(options:)` validates the keys. Invalid ones are reported through the
/// ``OutputOptions`` accessors (with their line:column); it may also throw. Either way the
/// output is invalid and the config does not load.
public protocol ConfigurableOutput: Output {
    /// The `type:` that selects this output, such as `webhook`.
    static var type: String { get }
    /// The keys it reads beyond those every output takes (``OutputOptions/commonKeys``).
    static var keys: [String] { get }

    init(options: OutputOptions) throws
}

/// Why an output did not take a delivery, in words for `fetchrun outputs`.
public struct OutputError: Error, Sendable, CustomStringConvertible {
    /// What the failure says about the other deliveries waiting for the same output.
    public enum Scope: Sendable, Hashable {
        /// The destination did not answer, or refused everything (a 5xx, a 401, a timeout):
        /// the output's other deliveries wait for the next attempt too.
        case destination
        /// The destination answered and refused these deliveries (a 400, a 413, a command's
        /// non-zero exit): each is tried alone, and the others go on.
        case deliveries
    }

    public var description: String
    public var scope: Scope
    /// How long the destination asked to be left alone (a 429's `Retry-After`): the
    /// deliveries are not tried again before then, even if their own backoff is shorter.
    public var retryAfter: Duration?

    public init(_ description: String, scope: Scope = .destination, retryAfter: Duration? = nil) {
        self.description = description
        self.scope = scope
        self.retryAfter = retryAfter
    }
}
