// The observation module: observers, property wrappers and `@Observable` integration.
// It re-exports `Defaults`, so one import gives both modules.
@_exported import Defaults
