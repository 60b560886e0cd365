package postgres

// IsUnavailable is exported for tests of package postgres_test.
var IsUnavailable = isUnavailable
