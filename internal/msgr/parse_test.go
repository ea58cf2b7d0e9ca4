package msgr

import (
	"errors"
	"testing"
)

func TestParseKefu(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want KefuEvent
	}{
		{
			name: "kf_msg_or_event with OpenKfId",
			in: `<xml><ToUserName><![CDATA[ww12345]]></ToUserName><CreateTime>1348831860</CreateTime>
<MsgType><![CDATA[event]]></MsgType><Event><![CDATA[kf_msg_or_event]]></Event>
<Token><![CDATA[ENCApHxnGDNAVNY4AaSJKj4Tb5mwsEMzxhFmHVGcra996NR]]></Token>
<OpenKfId><![CDATA[wkxxxxxxx]]></OpenKfId></xml>`,
			want: KefuEvent{MsgType: "event", Event: "kf_msg_or_event", Token: "ENCApHxnGDNAVNY4AaSJKj4Tb5mwsEMzxhFmHVGcra996NR", OpenKfID: "wkxxxxxxx"},
		},
		{
			name: "kf_msg_or_event with OpenKFID spelling",
			in:   `<xml><MsgType>event</MsgType><Event>kf_msg_or_event</Event><Token>T1</Token><OpenKFID>wkUPPER</OpenKFID></xml>`,
			want: KefuEvent{MsgType: "event", Event: "kf_msg_or_event", Token: "T1", OpenKfID: "wkUPPER"},
		},
		{
			name: "direct text with Text/Content",
			in: `<xml><MsgType><![CDATA[text]]></MsgType><MsgId><![CDATA[m-1]]></MsgId>
<ExternalUserID><![CDATA[wmEXT]]></ExternalUserID><OpenKfId><![CDATA[wkA]]></OpenKfId>
<Text><Content><![CDATA[你好 & welcome <3]]></Content></Text></xml>`,
			want: KefuEvent{MsgType: "text", MsgID: "m-1", ExternalUserID: "wmEXT", OpenKfID: "wkA", Content: "你好 & welcome <3"},
		},
		{
			name: "direct text with top-level Content",
			in:   `<xml><MsgType>text</MsgType><ExternalUserID>wmB</ExternalUserID><OpenKfId>wkB</OpenKfId><Content>  spaced  </Content></xml>`,
			want: KefuEvent{MsgType: "text", ExternalUserID: "wmB", OpenKfID: "wkB", Content: "  spaced  "},
		},
		{
			name: "Text/Content wins over top-level Content",
			in:   `<xml><MsgType>text</MsgType><Content>outer</Content><Text><Content>inner</Content></Text></xml>`,
			want: KefuEvent{MsgType: "text", Content: "inner"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKefu([]byte(tc.in))
			if err != nil {
				t.Fatalf("ParseKefu: %v", err)
			}
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}

	bad := map[string]string{
		"no MsgType":          `<xml><Event>kf_msg_or_event</Event><Token>T</Token></xml>`,
		"event without Token": `<xml><MsgType>event</MsgType><Event>kf_msg_or_event</Event><OpenKfId>wk</OpenKfId></xml>`,
		"wrong root":          `<msg><MsgType>text</MsgType></msg>`,
		"doctype":             `<!DOCTYPE xml><xml><MsgType>text</MsgType></xml>`,
		"entity":              `<xml><MsgType>&x;</MsgType></xml>`,
		"not xml":             `{"MsgType":"text"}`,
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if ev, err := ParseKefu([]byte(in)); !errors.Is(err, ErrXML) {
				t.Fatalf("ParseKefu = %+v, %v; want ErrXML", ev, err)
			}
		})
	}
}

func TestParseApp(t *testing.T) {
	in := `<xml><ToUserName><![CDATA[wwcorp]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName>
<CreateTime>1348831860</CreateTime><MsgType><![CDATA[text]]></MsgType>
<Content><![CDATA[知识库在哪里？]]></Content><MsgId>1234567890123456</MsgId><AgentID>1000002</AgentID></xml>`
	got, err := ParseApp([]byte(in))
	if err != nil {
		t.Fatalf("ParseApp: %v", err)
	}
	want := AppMessage{ToUserName: "wwcorp", FromUserName: "zhangsan", CreateTime: 1348831860, MsgType: "text", Content: "知识库在哪里？", MsgID: "1234567890123456", AgentID: "1000002"}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	// Content is only reported for text messages.
	img := `<xml><FromUserName>u</FromUserName><CreateTime> 7 </CreateTime><MsgType>image</MsgType><Content>ignored</Content><PicUrl>http://x</PicUrl></xml>`
	got, err = ParseApp([]byte(img))
	if err != nil {
		t.Fatalf("ParseApp(image): %v", err)
	}
	if got.Content != "" || got.MsgType != "image" || got.CreateTime != 7 {
		t.Fatalf("image message parsed as %+v", got)
	}

	bad := map[string]string{
		"no MsgType":     `<xml><FromUserName>u</FromUserName></xml>`,
		"bad CreateTime": `<xml><MsgType>text</MsgType><CreateTime>yesterday</CreateTime></xml>`,
		"wrong root":     `<root><MsgType>text</MsgType></root>`,
		"doctype":        `<!DOCTYPE xml [<!ENTITY a "b">]><xml><MsgType>&a;</MsgType></xml>`,
		"truncated":      `<xml><MsgType>text</MsgType>`,
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if m, err := ParseApp([]byte(in)); !errors.Is(err, ErrXML) {
				t.Fatalf("ParseApp = %+v, %v; want ErrXML", m, err)
			}
		})
	}
}
