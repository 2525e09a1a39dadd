import Foundation
import Testing

/// A preferences window made from keys by DefaultsAdwaita, on an X server of its own: the right
/// row for each key's type, titled from its summary, bounded by its range, following changes
/// made anywhere, writing the person's, resetting, and showing locks and overrides.
@Suite struct PreferencesWindowTests {
    @Test func eachKeyGetsTheRowItsTypeNeedsAndTheWindowWritesNothing() async throws {
        let session = try await BoundWindowSession(mode: "preferences")
        defer { session.close() }
        let shown = await windowRows(session)
        #expect(shown["fontSize"]?["kind"] == "number" && shown["fontSize"]?["title"] == "Font_size")
        #expect(shown["fontSize"]?["bounds"] == "6.0..72.0" && shown["fontSize"]?["step"] == "1.0", "\(shown)")
        #expect(shown["fontSize"]?["value"] == "12.0" && shown["fontSize"]?["subtitle"] == "In_points")
        #expect(shown["zoom"]?["bounds"] == "0.5..3.0" && shown["zoom"]?["step"] == "0.01", "\(shown)")
        #expect(shown["showLineNumbers"]?["kind"] == "toggle" && shown["showLineNumbers"]?["value"] == "true")
        #expect(shown["theme"]?["kind"] == "choice" && shown["theme"]?["name"] == "System", "\(shown)")
        #expect(shown["displayName"]?["kind"] == "text" && shown["displayName"]?["value"] == "\"\"")
        #expect(shown["title"]?["title"] == "title" && shown["title"]?["value"] == "Untitled", "no summary: the name")
        #expect(shown["windowSize"]?["kind"] == "json", "\(shown)")
        #expect(shown["windowSize"]?["subtitle"] == #"{"height":600,"width":800}_(default)"#, "\(shown)")
        for (key, row) in shown {
            #expect(row["reset"] == "false" && row["status"] == "false" && row["sensitive"] == "true", "\(key): \(row)")
        }
        #expect(try await session.stored().isEmpty, "a window made from keys writes nothing")
    }

    @Test func rowsFollowAnotherProcessAndAHandEditAndOffersAReset() async throws {
        let session = try await BoundWindowSession(mode: "preferences")
        defer { session.close() }
        _ = try await session.outside(["write", "fontSize", "18"], until: "event fontSize 18")
        _ = try await session.outside(["write", "theme", #""dark""#], until: #"event theme "dark""#)
        var shown = await windowRows(session)
        #expect(shown["fontSize"]?["value"] == "18.0" && shown["fontSize"]?["reset"] == "true", "\(shown)")
        #expect(shown["theme"]?["value"] == "2" && shown["theme"]?["name"] == "Dark", "\(shown)")

        // A hand edit: the whole file written anew, as an editor saves it.
        let edited =
            #"{"fontSize": 18, "theme": "dark", "zoom": 1.5, "displayName": "Ada", "showLineNumbers": false, "title": "Notes", "windowSize": {"width": 1024, "height": 700}}"#
        try Data(edited.utf8).write(to: session.file, options: .atomic)
        _ = await session.lines(until: #"event windowSize {"height":700,"width":1024}"#)
        shown = await windowRows(session)
        #expect(shown["zoom"]?["value"] == "1.5" && shown["displayName"]?["value"] == "Ada", "\(shown)")
        #expect(shown["showLineNumbers"]?["value"] == "false" && shown["title"]?["value"] == "Notes", "\(shown)")
        #expect(shown["windowSize"]?["subtitle"] == #"{"height":700,"width":1024}"#, "\(shown)")
        #expect(shown["windowSize"]?["reset"] == "true" && shown["title"]?["reset"] == "true", "\(shown)")
    }

    @Test func aChangeThroughARowReachesTheFileOnceAndResetRemovesTheKey() async throws {
        let session = try await BoundWindowSession(mode: "preferences")
        defer { session.close() }
        var lines = await session.run("set fontSize 20")
        #expect(lines.filter { $0.hasPrefix("event ") } == ["event fontSize 20"], "one write, no echo: \(lines)")
        lines = await session.run("set showLineNumbers false")
        lines += await session.run("set theme 3")
        lines += await session.run("set zoom 2.25")
        lines += await session.run("set displayName Ada")
        var stored = try await session.stored()
        #expect(stored["fontSize"] as? Int == 20 && stored["showLineNumbers"] as? Bool == false)
        #expect(stored["theme"] as? String == "solarized" && stored["zoom"] as? Double == 2.25, "\(stored)")
        #expect(stored["displayName"] as? String == "Ada", "\(stored)")
        #expect(lines.filter { $0.hasPrefix("event ") }.count == 4, "\(lines)")

        // Out of range: the spin button clamps, and the file takes what it shows.
        _ = await session.run("set fontSize 500")
        #expect(try await session.stored()["fontSize"] as? Int == 72)

        lines = await session.run("reset fontSize")
        #expect(lines.contains("event fontSize (none)"), "\(lines)")
        var shown = await windowRows(session)
        #expect(shown["fontSize"]?["value"] == "12.0" && shown["fontSize"]?["reset"] == "false", "\(shown)")
        stored = try await session.stored()
        #expect(stored["fontSize"] == nil && stored["zoom"] != nil, "reset removes the key alone: \(stored)")

        // "Reset all" of the first group: its keys go, the second group's stay.
        _ = await session.run("resetall 0")
        stored = try await session.stored()
        #expect(stored.keys.sorted() == ["displayName"], "\(stored)")
        shown = await windowRows(session)
        #expect(shown["theme"]?["name"] == "System" && shown["zoom"]?["value"] == "1.0", "\(shown)")
    }

    @Test func aLockedKeysRowIsInsensitiveWithItsFileNamedAndEditableOnceLifted() async throws {
        let session = try await BoundWindowSession(mode: "preferences") { directory in
            let system = directory.appendingPathComponent("system.json")
            try Data(#"{ "": { "locked": ["showLineNumbers"] }, "showLineNumbers": false }"#.utf8)
                .write(to: system, options: .atomic)
        }
        defer { session.close() }
        let system = session.directory.appendingPathComponent("system.json")
        var shown = await windowRows(session)
        let locked = shown["showLineNumbers"] ?? [:]
        #expect(locked["value"] == "false" && locked["sensitive"] == "false" && locked["editable"] == "false")
        #expect(locked["status"] == "true" && locked["tip"] == "Locked_by_\(system.path)", "\(locked)")

        try Data(#"{ "showLineNumbers": false }"#.utf8).write(to: system, options: .atomic)
        _ = await session.lines(until: "event showLineNumbers false")
        shown = await windowRows(session)
        let lifted = shown["showLineNumbers"] ?? [:]
        #expect(
            lifted["sensitive"] == "true" && lifted["editable"] == "true" && lifted["status"] == "false",
            "\(lifted)"
        )
    }

    /// libadwaita's search, over rows titled from the keys' summaries (and their subtitles).
    @Test func theWindowsSearchFindsAKeyByItsSummary() async throws {
        let session = try await BoundWindowSession(mode: "preferences")
        defer { session.close() }
        func found(_ text: String) async -> [String]? {
            let lines = await session.run("search \(text)")
            // No "found" line at all (the search not run) is not the same as finding nothing.
            return lines.first { $0.hasPrefix("found") }?.split(separator: " ").dropFirst().map(String.init)
        }
        #expect(await found("colour") == ["Colour_theme"])
        #expect(await found("size") == ["Font_size", "Window_size"])
        #expect(await found("points") == ["Font_size"], "the subtitle the caller gave")
        #expect(await found("nothing like it") == [])
    }

    /// A first screen's rows are made before the first frame, the rest after it, while the main
    /// loop is idle: all of them in the end, in order, bound and found by the search; on a page
    /// not shown too (each page makes its first screen at once).
    @Test(arguments: [false, true])
    func rowsPastTheFirstScreenAreMadeAfterTheFirstFrameAndWorkAsTheOthers(onASecondPage: Bool) async throws {
        let session = try await BoundWindowSession(
            mode: "preferences",
            environment: ["HELPER_MORE_ROWS": "40", "HELPER_MORE_ON_PAGE_2": onASecondPage ? "1" : "0"]
        )
        defer { session.close() }
        let atOnce = onASecondPage ? 7 + 12 : 12
        #expect(await session.line(startingWith: "first frame") == "first frame rows=\(atOnce) complete=false")

        var treeLine = await session.run("tree").first { $0.hasPrefix("tree") }
        if treeLine == nil { treeLine = await session.line(startingWith: "tree") }
        let tree = treeLine?.split(separator: " ").dropFirst()
        let expected =
            ["Font_size", "Show_line_numbers", "Colour_theme", "Zoom", "Display_name", "title", "Window_size"]
            + (0..<40).map { "More_\($0)" }
        #expect(tree.map { $0.map(String.init) } == expected)

        _ = try await session.outside(["write", "more39", "7"], until: "event more39 7")
        let shown = await windowRows(session)
        #expect(shown["more39"]?["value"] == "7.0" && shown["more39"]?["reset"] == "true", "\(shown)")
        #expect(shown["more0"]?["bounds"] == "0.0..99.0", "\(shown)")
        let found = await session.run("search More 39").first { $0.hasPrefix("found") }
        #expect(found == "found More_39")
        _ = await session.run("set more38 5")
        #expect(try await session.stored()["more38"] as? Int == 5)
    }

    @Test func aKeyOverriddenForThisRunSaysSo() async throws {
        let session = try await BoundWindowSession(mode: "preferences", environment: ["PREFS_ZOOM": "2"])
        defer { session.close() }
        let zoom = await windowRows(session)["zoom"] ?? [:]
        #expect(zoom["value"] == "2.0" && zoom["status"] == "true", "\(zoom)")
        let words = "Set_for_this_run_by_the_environment_variable_PREFS_ZOOM"
        #expect(zoom["tip"] == words && zoom["subtitle"] == "Of_the_text_—_" + words, "\(zoom)")
    }

    @Test func aKeyALaunchArgumentOverridesSaysSoAndWinsOverTheEnvironment() async throws {
        let session = try await BoundWindowSession(
            mode: "preferences",
            environment: ["PREFS_FONT_SIZE": "20"],
            arguments: ["-fontSize", "30"]
        )
        defer { session.close() }
        let fontSize = await windowRows(session)["fontSize"] ?? [:]
        #expect(fontSize["value"] == "30.0" && fontSize["status"] == "true", "\(fontSize)")
        let words = "Set_for_this_run_by_a_launch_argument"
        #expect(fontSize["tip"] == words && fontSize["subtitle"] == "In_points_—_" + words, "\(fontSize)")
        #expect(try await session.stored().isEmpty, "an override writes nothing")
    }
}
