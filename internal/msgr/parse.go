package msgr

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// EventKfMsgOrEvent is the kefu callback event announcing that new
// messages or events are waiting; the callback carries only a Token, and
// the content must be pulled with Client.SyncKefu.
const EventKfMsgOrEvent = "kf_msg_or_event"

// KefuEvent is a decrypted customer-service ("kefu") callback. For
// kf_msg_or_event notifications Token and OpenKfID drive a SyncKefu pull;
// for direct text messages ExternalUserID, OpenKfID and Content are set.
type KefuEvent struct {
	MsgType        string
	Event          string
	MsgID          string
	OpenKfID       string
	Token          string
	ExternalUserID string
	Content        string
}

// kefuXML mirrors the inner kefu XML. The platform has spelled the kefu
// account id both OpenKfId and OpenKFID, and content appears either as
// <Text><Content> or top-level <Content>, so all variants are captured.
type kefuXML struct {
	XMLName           xml.Name `xml:"xml"`
	MsgType           string   `xml:"MsgType"`
	Event             string   `xml:"Event"`
	MsgID             string   `xml:"MsgId"`
	OpenKfIDLower     string   `xml:"OpenKfId"`
	OpenKFIDUpper     string   `xml:"OpenKFID"`
	Token             string   `xml:"Token"`
	ExternalUserID    string   `xml:"ExternalUserID"`
	ExternalUserIDAlt string   `xml:"ExternalUserId"`
	Content           string   `xml:"Content"`
	Text              struct {
		Content string `xml:"Content"`
	} `xml:"Text"`
}

// ParseKefu parses the decrypted inner XML of a kefu callback (as
// returned by Crypto.OpenMessage) with SafeUnmarshal. It fails with
// ErrXML when MsgType is missing, or when a kf_msg_or_event notification
// has no Token, because such a callback cannot be acted on.
func ParseKefu(inner []byte) (KefuEvent, error) {
	var x kefuXML
	if err := SafeUnmarshal(inner, &x, MaxBodyBytes); err != nil {
		return KefuEvent{}, err
	}
	ev := KefuEvent{
		MsgType:        strings.TrimSpace(x.MsgType),
		Event:          strings.TrimSpace(x.Event),
		MsgID:          strings.TrimSpace(x.MsgID),
		OpenKfID:       firstNonEmpty(x.OpenKfIDLower, x.OpenKFIDUpper),
		Token:          strings.TrimSpace(x.Token),
		ExternalUserID: firstNonEmpty(x.ExternalUserID, x.ExternalUserIDAlt),
		Content:        x.Text.Content,
	}
	if ev.Content == "" {
		ev.Content = x.Content
	}
	if ev.MsgType == "" {
		return KefuEvent{}, fmt.Errorf("%w: kefu message without MsgType", ErrXML)
	}
	if ev.Event == EventKfMsgOrEvent && ev.Token == "" {
		return KefuEvent{}, fmt.Errorf("%w: %s without Token", ErrXML, EventKfMsgOrEvent)
	}
	return ev, nil
}

// AppMessage is a decrypted application ("app") callback. Content is only
// filled for MsgType "text"; other message types carry their payload in
// elements this package does not interpret.
type AppMessage struct {
	ToUserName   string
	FromUserName string
	MsgType      string
	Content      string
	MsgID        string
	AgentID      string
	CreateTime   int64
}

// appXML mirrors the inner app XML. CreateTime is read as text so a bad
// value yields ErrXML with context rather than a reflection error.
type appXML struct {
	XMLName      xml.Name `xml:"xml"`
	ToUserName   string   `xml:"ToUserName"`
	FromUserName string   `xml:"FromUserName"`
	CreateTime   string   `xml:"CreateTime"`
	MsgType      string   `xml:"MsgType"`
	Content      string   `xml:"Content"`
	MsgID        string   `xml:"MsgId"`
	AgentID      string   `xml:"AgentID"`
}

// ParseApp parses the decrypted inner XML of an app callback (as returned
// by Crypto.OpenMessage) with SafeUnmarshal. It fails with ErrXML when
// MsgType is missing or CreateTime is not an integer.
func ParseApp(inner []byte) (AppMessage, error) {
	var x appXML
	if err := SafeUnmarshal(inner, &x, MaxBodyBytes); err != nil {
		return AppMessage{}, err
	}
	m := AppMessage{
		ToUserName:   strings.TrimSpace(x.ToUserName),
		FromUserName: strings.TrimSpace(x.FromUserName),
		MsgType:      strings.TrimSpace(x.MsgType),
		MsgID:        strings.TrimSpace(x.MsgID),
		AgentID:      strings.TrimSpace(x.AgentID),
	}
	if m.MsgType == "" {
		return AppMessage{}, fmt.Errorf("%w: app message without MsgType", ErrXML)
	}
	if ct := strings.TrimSpace(x.CreateTime); ct != "" {
		v, err := strconv.ParseInt(ct, 10, 64)
		if err != nil {
			return AppMessage{}, fmt.Errorf("%w: bad CreateTime %q", ErrXML, ct)
		}
		m.CreateTime = v
	}
	if m.MsgType == "text" {
		m.Content = x.Content
	}
	return m, nil
}

// firstNonEmpty returns the first value that is non-empty after trimming,
// used to merge the platform's alternative element spellings.
func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
