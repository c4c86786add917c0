// For TestFaketimeMovesTheJVM: one line in, the JVM's clocks out (currentTimeMillis, nanoTime in ms).
public class Clock {
  public static void main(String[] a) throws Exception {
    java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
    while (in.readLine() != null) {
      System.out.println(System.currentTimeMillis() + " " + System.nanoTime() / 1000000);
      System.out.flush();
    }
  }
}
