package app

// CheckEnrichText is exported for tests of package app_test.
var CheckEnrichText = checkEnrichText
