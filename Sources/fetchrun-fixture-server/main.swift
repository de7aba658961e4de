import Foundation
import FixtureServer

// The fixture server as a program, for benchmarks and trying things by hand:
// prints its base URL on the first line of stdout, then serves until stdin closes or it is killed.
let server = try FixtureServer()
print(server.url(""))
fflush(nil)
while readLine() != nil {}
server.stop()
