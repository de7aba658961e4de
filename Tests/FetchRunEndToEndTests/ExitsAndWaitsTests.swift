import FixtureServer
import Foundation
import Testing
import TestSupport

/// Exits and waits say what happened: a listen address in use fails the command before it is
/// ready, and an SMTP server that stops answering costs an output its `timeout`, no more.
@Suite struct ExitsAndWaitsTests {
    /// A TCP socket listening on 127.0.0.1 at a port of the kernel's choice, held by the test.
    final class BusyPort {
        let descriptor: Int32
        let port: UInt16

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0, listen(descriptor, 4) == 0 else { throw CocoaError(.fileWriteUnknown) }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
            port = UInt16(bigEndian: address.sin_port)
            self.descriptor = descriptor
        }

        deinit { close(descriptor) }
    }

    @Test(arguments: ["watch", "worker"])
    func aListenAddressInUseFailsTheCommandBeforeItIsReady(command: String) async throws {
        let busy = try BusyPort()
        let fetchrun = try FetchRunBinary()
        let state = command == "worker" ? "state: postgres://fetchrun@127.0.0.1:1/none\n" : "state_dir: state\n"
        try fetchrun.write(state + "sources:\n  - { name: t, type: traffic, interval: 1s }\n", to: "sources.yaml")
        let receiver = try NotifyReceiver()
        let run = try await fetchrun.run([command, "--listen", "127.0.0.1:\(busy.port)", "--for", "20s"], environment: ["NOTIFY_SOCKET": receiver.path], timeout: .seconds(30))
        #expect(run.status == 69, "\(run.status): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.contains { $0 == "fetchrun: cannot listen on 127.0.0.1:\(busy.port): Address already in use" }, "\(run.stderr)")
        #expect(!NotifyReceiver.kinds(receiver.messages()).contains("READY=1"))
        // Nothing was fetched: the command ended before its work began.
        #expect(!run.stdout.contains("traffic"), "\(run.stdout)")
    }

    /// A config whose one source sends its first item to `smtp`, with the output's `timeout`.
    static func mailing(to smtp: SMTPFixture, timeout: String, state: String) -> String {
        """
        state_dir: \(state)
        outputs:
          - { name: mail, type: email, url: "\(smtp.url)", from: f@example.org, to: [me@example.org], starttls: off, timeout: \(timeout) }
        sources:
          - { name: t, type: traffic, min: 1, max: 1, outputs: [mail], send_baseline: true }
        """
    }

    @Test(arguments: [SMTPFixture.Silence.afterData, .atQuit])
    func anSMTPServerThatStopsAnsweringCostsTheOutputItsTimeout(silence: SMTPFixture.Silence) async throws {
        let smtp = try SMTPFixture(silence: silence)
        let fetchrun = try FetchRunBinary()
        try fetchrun.write(Self.mailing(to: smtp, timeout: "2s", state: "state"), to: "sources.yaml")
        let started = ContinuousClock.now
        let run = try await fetchrun.run([], timeout: .seconds(60))
        let took = ContinuousClock.now - started
        // Two seconds of the output's own, and a margin for a loaded machine; libcurl's default
        // wait for an answer is 120 s.
        #expect(took < .seconds(12), "took \(took): \(run.stderr)")
        #expect(smtp.messages.count == 1)
        if silence == .atQuit {
            // The mail was taken: the goodbye it never got does not make it a failure.
            #expect(run.stderr.contains("mail: 1 sent"), "\(run.stderr)")
        }

        // SIGTERM while the server is silent ends the run within the grace.
        let slow = try SMTPFixture(silence: silence)
        try fetchrun.write(Self.mailing(to: slow, timeout: "60s", state: "state2"), to: "sources.yaml")
        let running = try fetchrun.start([])
        // The server counts the mail at its last line, and from then on answers nothing: fetchrun
        // is waiting for the reply to its data, or about to wait for the one to its QUIT.
        try await waitUntil("the mail is with the server") { slow.messages.count == 1 }
        let signalled = ContinuousClock.now
        running.process.signal(SIGTERM)
        await running.waitForExit(timeout: .seconds(30))
        #expect(ContinuousClock.now - signalled < .seconds(8), "\((try? String(contentsOf: running.stderr, encoding: .utf8)) ?? "")")
    }

    @Test func aServiceThatAsksToWaitIsLeftAloneByTheNextRunAndByRetryUnlessForced() async throws {
        let server = try FixtureServer()
        server.respond(to: "/hook", status: 429, headers: [("Retry-After", "600")])
        let fetchrun = try FetchRunBinary()
        try fetchrun.write("""
            state_dir: state
            outputs:
              - { name: chat, type: webhook, url: "\(server.url("/hook"))" }
            sources:
              - { name: t, type: traffic, min: 2, max: 2, seed: 7, outputs: [chat], send_baseline: true }
            """, to: "sources.yaml")
        let first = try await fetchrun.run([])
        #expect(first.stderr.contains("outputs: chat: 1 not sent (HTTP 429") && first.stderr.contains("the service asked for nothing before"), "\(first.stderr)")
        #expect(server.requests(to: "/hook").count == 1)

        // The next run fetches (two more items) and sends nothing to chat: not the refused
        // delivery, nor those behind it.
        server.respond(to: "/hook", status: nil)
        let second = try await fetchrun.run([])
        #expect(second.stderr.contains("outputs: chat: nothing sent before"), "\(second.stderr)")
        #expect(server.requests(to: "/hook").count == 1)

        let listed = try await fetchrun.run(["outputs"])
        #expect(listed.stdout.contains("not before") && listed.stdout.contains("HTTP 429"), "\(listed.stdout)")
        let retried = try await fetchrun.run(["outputs", "--retry"])
        #expect(retried.status == 2 && retried.stderr.contains("nothing sent before"), "\(retried.status) \(retried.stderr)")
        #expect(server.requests(to: "/hook").count == 1)
        let json = try await fetchrun.run(["outputs", "--format", "json"])
        #expect(json.stdout.contains(#""not_before":"#), "\(json.stdout)")

        let forced = try await fetchrun.run(["outputs", "--retry", "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(server.requests(to: "/hook").count == 5, "\(server.requests(to: "/hook").count)")
        #expect(!(try await fetchrun.run(["outputs"])).stdout.contains("not before"))
    }
}
