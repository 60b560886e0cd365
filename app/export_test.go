package app

// Exported for tests of package app_test.
var (
	StringsOf = stringsOf
	Int64Of   = int64Of
)
