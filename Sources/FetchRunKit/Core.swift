// The layers below the engine are part of its API: a program that imports FetchRunKit sees
// FetchFailure, JSONValue (FetchRunCore) and the HTTP client and its requests
// (FetchRunTransport) as before.
@_exported import FetchRunCore
@_exported import FetchRunTransport
