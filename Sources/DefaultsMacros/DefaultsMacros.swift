// For code written for sindresorhus/Defaults, whose `@ObservableDefault` is a macro in a module of
// this name: here `@ObservableDefault` is a property wrapper in `DefaultsObservation`, so this module
// only re-exports it (and, through it, `Defaults`). No macro, no swift-syntax.
@_exported import DefaultsObservation
