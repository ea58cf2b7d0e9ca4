// Package msgr implements the enterprise-messenger (WeCom-style) integration
// used by Lore's two chat channels: "kefu" (customer service) and "app"
// (application messages).
//
// It covers three concerns that must agree byte for byte with the vendor's
// wire format:
//
//   - callback crypto (Crypto): SHA-1 request signatures, AES-256-CBC with a
//     32-byte PKCS#7 block, and the random/length/message/receive-id
//     plaintext layout, for both the GET URL verification and POST
//     message callbacks;
//   - safe XML handling (SafeUnmarshal, ParseKefu, ParseApp): callback bodies
//     come from the network, so DOCTYPE/ENTITY declarations, custom entity
//     references and oversized bodies are refused before parsing;
//   - the outbound API (Client): access-token caching and the send/sync
//     endpoints used to reply to users.
//
// Every verification failure maps to one of the named errors (ErrSignature,
// ErrDecrypt, ErrReceiveID, ErrXML, ErrTooLarge, ErrReplay) so HTTP handlers
// can answer 400 without inspecting error strings.
package msgr
