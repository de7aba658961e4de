// The shared vocabulary (FetchRunCore) is part of the engine's API: a program that imports
// FetchRunKit sees FetchFailure, JSONValue and the rest as before.
@_exported import FetchRunCore
