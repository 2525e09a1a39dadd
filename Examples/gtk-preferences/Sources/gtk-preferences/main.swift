// gtk-preferences: a GTK 4 preferences window made from its settings' keys in one call with
// DefaultsAdwaita: its rows follow settings changed anywhere — another window, the `defaults`
// command, a hand edit — and write the user's changes.
//
//     swift run gtk-preferences                      # the window; edits persist
//     swift run gtk-preferences --self-test <dir>    # checks the widgets, writes <dir>/window.png
//
// In another terminal, `defaults write gtk-preferences fontSize 18` moves the spin button.
import CAdw
import DefaultsGtk
import DefaultsObservation
import Foundation

let arguments = CommandLine.arguments
if let flag = arguments.firstIndex(of: "--write-child"), flag + 1 < arguments.count {
    runWriteChild(file: URL(fileURLWithPath: arguments[flag + 1]), gsettingsFolder: nil)
}
if let flag = arguments.firstIndex(of: "--gsettings-child"), flag + 1 < arguments.count {
    runWriteChild(file: nil, gsettingsFolder: arguments[flag + 1])
}

gtk_init()
if let flag = arguments.firstIndex(of: "--self-test"), flag + 1 < arguments.count {
    var test = SelfTest(folder: arguments[flag + 1])
    exit(test.run())
}

let window = EditorWindow(printsChanges: true)
window.present()
print("editing \(Preferences.suite.fileURL!.path); close the window to quit")
while window.isOpen {
    g_main_context_iteration(nil, 1)
}
try? Preferences.suite.synchronize()
