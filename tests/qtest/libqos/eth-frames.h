/*
 * Ethernet frames for tests that play a host on the wire: IPv4/UDP frames,
 * and the fragments of a large ICMP echo as a 1500-byte-MTU host sends
 * them (what `ping -s 65507` puts on the wire).
 */
#ifndef LIBQOS_ETH_FRAMES_H
#define LIBQOS_ETH_FRAMES_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETH_FRAME_HLEN      14

uint16_t eth_frame_ip_checksum(const uint8_t *data, size_t len);

/* An IPv4/UDP frame of @len bytes (at least 42) from @src to @dst with
 * @tag in the first two payload bytes and the rest a pattern of it. */
void eth_frame_udp(uint8_t *f, size_t len, const uint8_t dst[6],
                   const uint8_t src[6], uint16_t tag);

/* An IPv4/TCP frame of @len bytes (at least 54) from @src to @dst: an ACK
 * with data, @tag in its IP id and sequence number, both checksums right. */
void eth_frame_tcp(uint8_t *f, size_t len, const uint8_t dst[6],
                   const uint8_t src[6], uint16_t tag);

/*
 * A numbered IPv4/UDP frame of @len bytes (ETH_FRAME_SEQ_MIN to
 * ETH_FRAME_SEQ_MAX):
 * eth_frame_udp() with the sequence number's low 16 bits as its tag and
 * the whole number, big-endian, as the first 8 payload bytes; for
 * counting frames one by one past 65536.
 */
#define ETH_FRAME_SEQ_MIN   50
#define ETH_FRAME_SEQ_MAX   1514
void eth_frame_udp_seq(uint8_t *f, size_t len, const uint8_t dst[6],
                       const uint8_t src[6], uint64_t seq);
/* The sequence number of such a frame from @src to @dst, or false when
 * any byte differs from the frame eth_frame_udp_seq() builds for it. */
bool eth_frame_udp_seq_check(const uint8_t *f, size_t len,
                             const uint8_t dst[6], const uint8_t src[6],
                             uint64_t *seq);

/*
 * A numbered test frame of @len bytes (at least 16): @dst, @src,
 * @ethertype, then byte i is (uint8_t)(i * 7 + tag), except for @tag
 * itself, big-endian at @tag_at: ETH_FRAME_TAG_FIRST (bytes 14-15) or
 * ETH_FRAME_TAG_LAST (the last two bytes).
 */
typedef enum EthFrameTagAt {
    ETH_FRAME_TAG_FIRST,
    ETH_FRAME_TAG_LAST,
} EthFrameTagAt;

void eth_frame_tagged(uint8_t *f, size_t len, const uint8_t dst[6],
                      const uint8_t src[6], uint16_t ethertype,
                      uint16_t tag, EthFrameTagAt tag_at);
/* The tag of such a frame. */
uint16_t eth_frame_tag(const uint8_t *f, size_t len, EthFrameTagAt tag_at);
/* Asserts that @f is the frame eth_frame_tagged() builds for its tag with
 * these addresses and type, byte for byte; returns the tag. */
uint16_t eth_frame_assert_tagged(const uint8_t *f, size_t len,
                                 const uint8_t dst[6], const uint8_t src[6],
                                 uint16_t ethertype, EthFrameTagAt tag_at);

/*
 * The frames of one ICMP echo request with @payload data bytes from
 * @src_ip to @dst_ip (host order), IP id @id, fragmented for a 1500-byte
 * MTU: GBytes each, in order.  65507 bytes give 45 fragments (44 x 1514
 * bytes and one of 429).
 */
GPtrArray *eth_frames_icmp_echo(const uint8_t dst[6], const uint8_t src[6],
                                uint32_t src_ip, uint32_t dst_ip,
                                uint16_t id, uint16_t seq, size_t payload);

#endif
