import Testing

/// Suites run one test at a time, in order: the browser tests (a Chromium takes a core to
/// start and more to render; on two cores, several at once slowed every other suite), then
/// the 2,000-source failover, whose bounds on the gaps of a schedule a busy machine stretches:
/// by then the other suites have mostly ended. Each keeps its own file; they nest here.
@Suite(.serialized) enum OneAtATime {}
