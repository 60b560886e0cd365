package usage_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/usage"
)

func TestCostUSD(t *testing.T) {
	is := is.New(t)
	is.Equal(usage.Entry{Cost: 1_500_000}.CostUSD(), 1.5)
	is.Equal(usage.Entry{Cost: 1}.CostUSD(), 0.000001)
	is.Equal(usage.Entry{}.CostUSD(), 0.0)
}
