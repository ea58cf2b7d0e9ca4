package workflows

import (
	"os"
	"strings"
	"testing"
)

// TestTemporalDevScriptMatches checks that temporal-dev.sh starts the dev
// server with every flag of DevServerArgs (the tests' and the bench's dev
// servers), so a developer's server behaves as the measured one.
func TestTemporalDevScriptMatches(t *testing.T) {
	b, err := os.ReadFile("../temporal-dev.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\\\n", " ")), " ")
	args := DevServerArgs()
	if len(args)%2 != 0 {
		t.Fatalf("DevServerArgs is not flag/value pairs: %q", args)
	}
	for i := 0; i < len(args); i += 2 {
		if pair := args[i] + " " + args[i+1]; !strings.Contains(script, pair) {
			t.Errorf("temporal-dev.sh does not pass %q", pair)
		}
	}
}
