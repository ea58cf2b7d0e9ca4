package api

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestBotReplayVariantsAreOneMessage: a signed callback without MsgId that is
// replayed with whitespace around the ciphertext or an extra element is the
// same message (processed once), and a body with a second <Encrypt> is
// refused. The old code hashed the whole body, so each variant was processed
// again.
func TestBotReplayVariantsAreOneMessage(t *testing.T) {
	f := newBotFixture(t, "sqlite", nil, nil)
	image := fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>lisi</FromUserName><CreateTime>1</CreateTime>"+
		"<MsgType>image</MsgType><PicUrl>http://x/y.png</PicUrl><AgentID>1000002</AgentID></xml>", botCorp)
	path, body := f.callback("/v1/bot/wecom-app", image, time.Now())
	start := strings.Index(body, "<Encrypt><![CDATA[") + len("<Encrypt><![CDATA[")
	end := strings.Index(body, "]]></Encrypt>")
	enc := body[start:end]
	variants := []string{
		body,
		strings.Replace(body, "<![CDATA["+enc+"]]>", "<![CDATA[ \n"+enc+"\n ]]>", 1),
		strings.Replace(body, "</xml>", "<Nonce>again</Nonce></xml>", 1),
	}
	for i, v := range variants {
		if v == body && i > 0 {
			t.Fatalf("variant %d did not change the body", i)
		}
		if r := f.post(path, v); r.Status != 200 || string(r.Raw) != "success" {
			t.Fatalf("variant %d: %d %q", i, r.Status, r.Raw)
		}
	}
	if n := f.processed(); n != 1 {
		t.Fatalf("processed rows %d after 3 variants of one message, want 1", n)
	}
	twice := strings.Replace(body, "</xml>", "<Encrypt><![CDATA["+enc+"]]></Encrypt></xml>", 1)
	if r := f.post(path, twice); r.Status != 400 {
		t.Fatalf("two Encrypt elements: %d %q", r.Status, r.Raw)
	}
	if n := f.processed(); n != 1 {
		t.Fatalf("processed rows %d, want 1", n)
	}
}
