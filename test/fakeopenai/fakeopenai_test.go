package fakeopenai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/fakeopenai"
)

const schemaPrompt = "JSON Schema:\n{\"type\":\"object\",\"required\":[\"name\",\"size\"],\"properties\":{\"name\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\",\"minimum\":1}}}\nKnown attributes of the entity:\n{\"name\":\"Acme\"}\n"

type answer struct {
	status  int
	content string
	usage   map[string]int
	header  http.Header
}

func post(ctx context.Context, url string, body any) (answer, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage map[string]int           `json:"usage"`
		Error struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return answer{}, fmt.Errorf("answer is not JSON: %s", raw)
	}
	a := answer{status: resp.StatusCode, usage: v.Usage, header: resp.Header}
	if len(v.Choices) > 0 {
		a.content = v.Choices[0].Message.Content
	} else {
		a.content = v.Error.Message
	}
	return a, nil
}

func chat(content any) map[string]any {
	return map[string]any{"model": "m1", "messages": []any{
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": content},
	}}
}

func TestDefaultAnswer(t *testing.T) {
	tests := []struct {
		name string
		body map[string]any
	}{
		{"string content", chat(schemaPrompt)},
		{"content parts", chat([]any{map[string]any{"type": "text", "text": schemaPrompt}})},
		{"response_format schema", func() map[string]any {
			b := chat("no schema in the prompt\nKnown attributes of the entity:\n{\"name\":\"Acme\"}")
			b["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "strict": true,
				"schema": map[string]any{"type": "object", "required": []any{"name", "size"},
					"properties": map[string]any{"name": map[string]any{"type": "string"}, "size": map[string]any{"type": "integer", "minimum": 1}}}}}
			return b
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f := fakeopenai.New(t)
			a, err := post(context.Background(), f.URL(), tt.body)
			is.NoErr(err)
			is.Equal(a.status, 200)
			var out map[string]any
			is.NoErr(json.Unmarshal([]byte(a.content), &out))
			is.Equal(out["name"], "Acme")
			size, ok := out["size"].(float64)
			is.True(ok && size >= 1 && size == float64(int(size)))
			is.True(a.usage["prompt_tokens"] > 0)
			is.Equal(a.usage["completion_tokens"], (len(a.content)+3)/4)
			is.Equal(a.usage["total_tokens"], a.usage["prompt_tokens"]+a.usage["completion_tokens"])
			req, ok := f.LastRequest()
			is.True(ok)
			is.Equal(req.Model, "m1")
			is.Equal(req.Messages[1].Role, "user")
			is.Equal(req.Entity["name"], "Acme")
			is.True(req.Schema != nil)
		})
	}
}

func TestKnobs(t *testing.T) {
	is := is.New(t)
	f := fakeopenai.New(t)
	body := chat(schemaPrompt)

	f.FailNext(2, 429)
	for range 2 {
		a, err := post(context.Background(), f.URL(), body)
		is.NoErr(err)
		is.Equal(a.status, 429)
		is.Equal(a.header.Get("Retry-After"), "1")
	}
	f.FailNext(1, 500)
	a, _ := post(context.Background(), f.URL(), body)
	is.Equal(a.status, 500)

	f.InvalidNext(1)
	a, _ = post(context.Background(), f.URL(), body)
	is.Equal(a.status, 200)
	is.True(!json.Valid([]byte(a.content)))

	f.SchemaInvalidNext(1)
	a, _ = post(context.Background(), f.URL(), body)
	var out map[string]any
	is.NoErr(json.Unmarshal([]byte(a.content), &out))
	_, isString := out["size"].(string)
	is.True(isString) // wrong type

	f.SetResponder(func(r fakeopenai.ChatRequest) (string, int) { return `{"model":"` + r.Model + `"}`, 0 })
	a, _ = post(context.Background(), f.URL(), body)
	is.Equal(a.content, `{"model":"m1"}`)
	f.SetResponder(nil)

	a, _ = post(context.Background(), f.URL(), body)
	is.NoErr(json.Unmarshal([]byte(a.content), &out))
	is.Equal(out["name"], "Acme") // back to normal
	is.Equal(f.Requests(), 7)
	is.Equal(len(f.AllRequests()), 7)
}

func TestLatencyHonoursCancellation(t *testing.T) {
	is := is.New(t)
	f := fakeopenai.New(t, fakeopenai.WithLatency(5*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := post(ctx, f.URL(), chat(schemaPrompt))
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.True(time.Since(start) < time.Second)
	f.SetLatency(0)
	a, err := post(context.Background(), f.URL(), chat(schemaPrompt))
	is.NoErr(err)
	is.Equal(a.status, 200)
}

func TestAPIKey(t *testing.T) {
	is := is.New(t)
	f := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-1"))
	a, err := post(context.Background(), f.URL(), chat(schemaPrompt))
	is.NoErr(err)
	is.Equal(a.status, 401)
}

func TestHistory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []fakeopenai.Option
		kept    []string
		counted int
	}{
		{"every request by default", nil, []string{"a", "b", "c", "d"}, 4},
		{"the latest one", []fakeopenai.Option{fakeopenai.WithHistory(1)}, []string{"d"}, 4},
		{"the latest two", []fakeopenai.Option{fakeopenai.WithHistory(2)}, []string{"c", "d"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := fakeopenai.New(t, tc.opts...)
			for _, c := range []string{"a", "b", "c", "d"} {
				_, err := post(context.Background(), f.URL(), chat(c))
				is.NoErr(err)
			}
			is.Equal(f.Requests(), tc.counted) // every request counts
			var kept []string
			for _, r := range f.AllRequests() {
				kept = append(kept, r.Messages[len(r.Messages)-1].Content)
			}
			is.Equal(kept, tc.kept)
			last, ok := f.LastRequest()
			is.True(ok)
			is.Equal(last.Messages[len(last.Messages)-1].Content, "d")
		})
	}
}

func TestModelsAndMethods(t *testing.T) {
	is := is.New(t)
	f := fakeopenai.New(t, fakeopenai.WithModels("a", "b"))
	resp, err := http.Get(f.URL() + "/models")
	is.NoErr(err)
	defer resp.Body.Close()
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&list))
	is.Equal(len(list.Data), 2)
	is.Equal(list.Data[1].ID, "b")

	resp2, err := http.Get(f.URL() + "/chat/completions")
	is.NoErr(err)
	resp2.Body.Close()
	is.Equal(resp2.StatusCode, http.StatusMethodNotAllowed)
	is.Equal(f.Requests(), 0)
}

func TestConcurrentKnobs(t *testing.T) {
	f := fakeopenai.New(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%5 == 0 {
				f.FailNext(1, 500)
				f.SetLatency(time.Millisecond)
			}
			if _, err := post(context.Background(), f.URL(), chat(schemaPrompt)); err != nil {
				t.Error(err)
			}
			_ = f.Requests()
		}()
	}
	wg.Wait()
	if f.Requests() != 20 {
		t.Fatalf("requests = %d", f.Requests())
	}
}
