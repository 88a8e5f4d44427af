package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

// A person's own config.toml may choose another provider, or define
// agor's at another URL: with agor's endpoint set (the model gateway's
// relay) the turn still goes there, so no model request goes around the
// gateway.
func TestCodexEndpointOverUsersProvider(t *testing.T) {
	for name, conf := range map[string]string{
		"top":            "model_provider = \"mine\"\n",
		"beside-agor":    "model_provider = \"mine\"\n[model_providers.agor]\nname = \"agor\"\nbase_url = \"http://127.0.0.1:9/v1\"\nenv_key = \"OPENAI_API_KEY\"\n",
		"agor-redefined": "model_provider = \"agor\"\n[model_providers.agor]\nname = \"x\"\nbase_url = \"OTHER\"\nenv_key = \"OPENAI_API_KEY\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{Text: "via agor", Usage: codexUsage})
			other := modeltest.NewOpenAIResponses(t, modeltest.OpenAIResponsesScript{Text: "around", Usage: codexUsage})
			req := codexRequest(t, srv, "say hello", "default")
			home := filepath.Join(Getenv(req.Env, "CODEX_HOME"))
			if err := os.MkdirAll(home, 0o700); err != nil {
				t.Fatal(err)
			}
			own := strings.ReplaceAll(conf, "OTHER", other.URL) + "\n[model_providers.mine]\nname = \"mine\"\nbase_url = \"" + other.URL +
				"\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("model = \"gpt-5.1-codex-mini\"\n"+own), 0o600); err != nil {
				t.Fatal(err)
			}
			host := &codexHost{}
			codexRun(t, req, host)
			if n, m := len(srv.Requests()), len(other.Requests()); n == 0 || m != 0 {
				t.Fatalf("%d requests to agor's endpoint, %d to the user's provider; want some, none", n, m)
			}
		})
	}
}
