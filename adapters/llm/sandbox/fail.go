package sandbox

// FailAttribute is the entity attribute that makes every sandbox model
// answer its enrichment calls like sandbox::broken (an object that fails the
// schema) when its value is "fail": a batch can plant failures on chosen
// entities, deterministically.
const FailAttribute = "_sandbox"

func failRequested(entity map[string]any) bool {
	v, _ := entity[FailAttribute].(string)
	return v == "fail"
}
