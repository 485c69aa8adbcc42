"""The Textual UI: a pure view of the journal event stream, plus keys that call the session."""
