/* sealq.h — which queues this node seals pushes for: a cache of their encryptionEnabled.
 *
 * The database decides, not this cache. queen.push_v1 refuses a segment of plaintext records
 * for a queue with encryptionEnabled (SQLSTATE QE001, "push_v1: group N ..."), checked under
 * the queue's clock lock, which configure takes too: a push that commits after the configure
 * that enabled encryption has read that configure's options. The writer then marks the queue
 * here, seals, and sends again. So the cache only saves that refusal's round trip:
 *  - a queue is marked sealed by a configure on this node and by a QE001 refusal;
 *  - a mark lasts SEALQ_TTL_MS, then the next push tries plaintext once more (and is refused
 *    again while the queue is still encrypted): that is how this node learns that another
 *    node turned encryption off; until then it keeps sealing, which every reader with the key
 *    opens, so a stale mark costs nothing but the sealing;
 *  - a configure on this node that turns encryption off clears the mark at once.
 * docs/encryption.md gives the bounds. Loop thread only (every writer of records runs there). */
#ifndef QUEEN_STORAGE_SEALQ_H
#define QUEEN_STORAGE_SEALQ_H

#include <stddef.h>
#include <stdint.h>

/* How long a mark is trusted before a push tries plaintext again. */
#define SEALQ_TTL_MS 30000
/* Marks kept at most; past it expired marks are dropped, and if that is not enough all are
 * (each queue is then learnt again through one refusal). */
#define SEALQ_MAX 65536

typedef struct sealq sealq;

sealq *sealq_new(void);
void sealq_free(sealq *q);
/* 1 when pushes to (tenant, queue) should be sealed at now_ms (a monotonic clock). */
int sealq_wants(sealq *q, const uint8_t tenant[16], const char *queue, size_t len, uint64_t now_ms);
/* Marks (sealed = 1, for SEALQ_TTL_MS from now_ms) or clears (sealed = 0) a queue. */
void sealq_set(sealq *q, const uint8_t tenant[16], const char *queue, size_t len, int sealed, uint64_t now_ms);
/* Marks live at now_ms (for tests and /status). */
uint32_t sealq_count(const sealq *q, uint64_t now_ms);

/* The SQLSTATE push_v1 and the timer insert raise or report for plaintext records headed for
 * a queue with encryptionEnabled. */
#define SEALQ_SQLSTATE "QE001"
/* The group number (1-based, as in push_v1's arrays) a QE001 message names; 0 if none. */
uint32_t sealq_refused_group(const char *errmsg);

#endif
