import ArgumentParser
import FetchRunKit
import Foundation

extension FetchRun {
    /// Asks a running `watch` or `worker` whether its loop turns: a container's HEALTHCHECK
    /// without curl.
    struct Healthcheck: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "healthcheck",
            abstract: "Ask a running watch or worker's /healthz (its --listen address); exit 0 when healthy, 1 otherwise.",
            discussion: "The address is --listen's, else the config's listen: address; the config's listen: token is sent when it has one."
        )

        @OptionGroup var configOptions: ConfigOptions
        @OptionGroup var monitor: MonitorOptions

        @Option(help: ArgumentHelp("Give up after this long.", valueName: "duration"), transform: { try DurationText.parse($0) })
        var timeout: Duration = .seconds(3)

        func run() async throws {
            // The config only adds the address and the token: without one, --listen is enough.
            let config = try? await configOptions.load()
            var settings: ListenSettings?
            if let config {
                settings = try monitor.settings(for: config)
            } else if let listen = monitor.listen {
                do {
                    let (host, port) = try ListenSettings.address(listen)
                    settings = ListenSettings(host: host, port: port)
                } catch {
                    throw ValidationError("--listen \(error)")
                }
            }
            guard let settings else {
                throw CommandFailure(ExitStatus.usage, "no address to ask: give --listen HOST:PORT, or listen: in \(configOptions.path)")
            }
            let url = "http://\(settings.written)/healthz"
            var headers: [(name: String, value: String)] = []
            if let token = settings.token { headers.append((name: "Authorization", value: "Bearer \(token)")) }
            let client = CurlHTTPClient()
            do {
                let response = try await withRunning(client) {
                    try await client.execute(HTTPRequest(url: url, headers: headers, deadline: client.now + timeout, maxBodyBytes: 4096, connectTimeout: timeout, maxRedirects: 0))
                }
                let body = TerminalText.safe(String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                guard response.status == 200 else {
                    throw CommandFailure(ExitCode(1), "\(url): \(response.status) \(body)")
                }
                print("healthy: \(body)")
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure(ExitCode(1), "\(url): \(error)")
            }
        }
    }
}
