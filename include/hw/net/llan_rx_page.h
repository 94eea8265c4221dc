/*
 * Legacy page-mode receive buffers (use-rx-buffer-pools=off): the guest's
 * buffer descriptors live in its own buffer-list page, 509 slots between
 * offsets 16 and 4088, used first-fit in ring order as the old device did.
 * The guest can rewrite that page at any time, so every scan is bounded by
 * the slot count, never by what the page holds.
 */
#ifndef HW_NET_LLAN_RX_PAGE_H
#define HW_NET_LLAN_RX_PAGE_H

#include "hw/ppc/spapr_vio.h"

#define LLAN_PAGE_SLOTS_START   16
#define LLAN_PAGE_SLOTS_END     4088    /* the no-buffer counter follows */
#define LLAN_PAGE_SLOTS \
    ((LLAN_PAGE_SLOTS_END - LLAN_PAGE_SLOTS_START) / 8)

typedef enum LlanPageResult {
    LLAN_PAGE_OK,
    LLAN_PAGE_NONE,         /* no free slot (add) or no fitting BD (take) */
    LLAN_PAGE_DMA_ERROR,    /* the buffer-list page is no longer mapped */
} LlanPageResult;

/* Stores @bd in the first slot after *add_ptr whose BD is not valid and
 * leaves *add_ptr on it. */
LlanPageResult llan_rx_page_add(SpaprVioDevice *dev, uint64_t buf_list,
                                uint32_t *add_ptr, uint64_t bd);
/* Takes the first valid BD after *use_ptr of at least @need bytes, zeroes
 * its slot and leaves *use_ptr on it. */
LlanPageResult llan_rx_page_take_first_fit(SpaprVioDevice *dev,
                                           uint64_t buf_list,
                                           uint32_t *use_ptr, uint32_t need,
                                           uint64_t *bd);
/* How many slots hold a valid BD, in *count. */
LlanPageResult llan_rx_page_count(SpaprVioDevice *dev, uint64_t buf_list,
                                  uint32_t *count);
/* Clears the slot at @ptr (to undo an add). */
void llan_rx_page_clear_slot(SpaprVioDevice *dev, uint64_t buf_list,
                             uint32_t ptr);

#endif
