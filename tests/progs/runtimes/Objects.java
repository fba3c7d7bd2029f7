// Objects [N=1500000]: the JVM under comex: N small objects in a HashMap and
// an ArrayList (the collector moves them), checked, sorted; prints checksums,
// exits 1 on a mismatch.
import java.util.*;

public class Objects {
    static final class Item {
        final int id; final String name; final long[] vals;
        Item(int id, int n) { this.id = id; name = "n" + (id * 7919L % n); vals = new long[] { id, 2L * id, id % 1000 }; }
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1500000;
        List<Item> items = new ArrayList<>();
        Map<String, Item> byName = new HashMap<>();
        for (int i = 0; i < n; i++) {
            Item it = new Item(i, n);
            items.add(it);
            byName.putIfAbsent(it.name, it);
        }
        long s = 0;
        for (int r = 0; r < 3; r++)
            for (Item it : items) s += it.id * 31L + it.vals[2] + it.name.length();
        for (int i = 0; i < n; i++) {
            Item it = items.get(i);
            if (it.id != i || it.vals[1] != 2L * i) { System.err.println("MISMATCH at " + i); System.exit(1); }
        }
        items.sort(Comparator.comparing((Item it) -> it.name).thenComparingInt(it -> it.id));
        long c = 0;
        for (int i = 0; i < n; i += 97) c = c * 31 + items.get(i).id;
        long m = 0;
        for (Item it : byName.values()) m += it.id;
        System.out.println("jvm objects " + n + ": hot " + s + " sorted " + c + " names " + byName.size() + " " + m);
    }
}
