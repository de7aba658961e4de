import Testing

/// Suites that load a two-core machine most, run one after the other: the browser tests (a
/// Chromium takes a core to start and more to render) and the 2,000-source failover, whose
/// bound on a gap across a killed worker a busy machine stretches. Each keeps its own file; they
/// nest here so that neither runs beside the other.
@Suite(.serialized) enum OneAtATime {}
