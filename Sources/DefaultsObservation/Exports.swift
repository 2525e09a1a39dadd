// One import gives both modules: `import DefaultsObservation` brings `Defaults` along.
@_exported import Defaults
