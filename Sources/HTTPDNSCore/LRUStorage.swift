/// A dictionary that remembers the order in which its entries were last used, so the least recently used can be
/// evicted in O(1). Nodes live in one array linked by index, so a hit costs one hash lookup and a few stores.
package struct LRUStorage<Key: Hashable, Value> {
    package init() {}

    private struct Node {
        var key: Key?
        var value: Value?
        var newer: Int
        var older: Int
    }

    private var slots: [Key: Int] = [:]
    private var nodes: [Node] = []
    private var free: [Int] = []
    private var newest = -1
    private var oldest = -1

    package var count: Int { slots.count }

    /// Every entry, from the most recently used to the least.
    package func forEachNewestFirst(_ body: (Key, Value) -> Void) {
        var slot = newest
        while slot >= 0 {
            let node = nodes[slot]
            body(node.key!, node.value!)
            slot = node.older
        }
    }

    /// The slot of `key`, without marking it used.
    package func slot(of key: Key) -> Int? { slots[key] }

    /// The value in `slot`.
    package func value(at slot: Int) -> Value { nodes[slot].value! }

    /// Changes the value in `slot` in place, without marking it used.
    package mutating func modify<R>(at slot: Int, _ body: (inout Value) -> R) -> R {
        body(&nodes[slot].value!)
    }

    /// Marks `slot` as the most recently used.
    package mutating func touch(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    /// Inserts or replaces the value for `key` and marks it the most recently used.
    package mutating func set(_ value: Value, for key: Key) {
        if let slot = slots[key] {
            nodes[slot].value = value
            touch(slot)
            return
        }
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
            nodes[slot] = Node(key: key, value: value, newer: -1, older: -1)
        } else {
            slot = nodes.count
            nodes.append(Node(key: key, value: value, newer: -1, older: -1))
        }
        slots[key] = slot
        linkAsNewest(slot)
    }

    /// Removes the value for `key`, if there is one.
    @discardableResult
    package mutating func remove(_ key: Key) -> Value? {
        guard let slot = slots.removeValue(forKey: key) else { return nil }
        return release(slot)
    }

    /// Removes and returns the least recently used entry.
    package mutating func removeOldest() -> (key: Key, value: Value)? {
        guard oldest >= 0 else { return nil }
        let slot = oldest
        let key = nodes[slot].key!
        slots.removeValue(forKey: key)
        return (key, release(slot))
    }

    package mutating func removeAll() {
        self = LRUStorage()
    }

    /// The keys, most recently used first.
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            keys.append(nodes[slot].key!)
            slot = nodes[slot].older
        }
        return keys
    }

    private mutating func release(_ slot: Int) -> Value {
        unlink(slot)
        let value = nodes[slot].value!
        nodes[slot].key = nil
        nodes[slot].value = nil
        free.append(slot)
        return value
    }

    private mutating func unlink(_ slot: Int) {
        let newer = nodes[slot].newer
        let older = nodes[slot].older
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        nodes[slot].newer = -1
        nodes[slot].older = -1
    }

    private mutating func linkAsNewest(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }
}
