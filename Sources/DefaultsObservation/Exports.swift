// One import gives both modules: `import DefaultsObservation` brings `Defaults` along.
@_exported import Defaults

/// The stored JSON value, by its short name inside this module.
@usableFromInline
typealias JSONValue = Defaults.JSONValue
