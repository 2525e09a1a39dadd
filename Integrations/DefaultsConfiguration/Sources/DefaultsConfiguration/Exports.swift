// `import DefaultsConfiguration` brings `Defaults` along, for `Defaults.Suite`.
@_exported import Defaults
