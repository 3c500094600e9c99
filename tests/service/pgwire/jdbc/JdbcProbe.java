// pgjdbc (the driver DBeaver, Metabase and Tableau use) against the endpoint: metadata, fetch size
// over server-prepared statements, typed parameters. Run by test_pgjdbc.py.
import java.sql.*;
public class JdbcProbe {
  public static void main(String[] a) throws Exception {
    try (Connection c = DriverManager.getConnection(a[0], a[1], a[2])) {
      DatabaseMetaData md = c.getMetaData();
      System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());
      try (ResultSet r = md.getSchemas()) { while (r.next()) System.out.println("schema " + r.getString(1)); }
      try (ResultSet r = md.getTables(null, "public", "%", new String[]{"TABLE"})) { int n = 0; while (r.next()) n++; System.out.println("tables " + n); }
      try (ResultSet r = md.getColumns(null, "public", "nodes", "%")) { while (r.next()) System.out.println("column " + r.getString("COLUMN_NAME") + " " + r.getString("TYPE_NAME") + " " + r.getInt("DATA_TYPE") + " " + r.getString("IS_NULLABLE")); }
      try (ResultSet r = md.getPrimaryKeys(null, "public", "nodes")) { while (r.next()) System.out.println("pk " + r.getString("COLUMN_NAME") + " " + r.getString("PK_NAME")); }
      try (ResultSet r = md.getIndexInfo(null, "public", "nodes", false, false)) { while (r.next()) System.out.println("index " + r.getString("INDEX_NAME")); }
      try (ResultSet r = md.getImportedKeys(null, "public", "jobs")) { int n = 0; while (r.next()) n++; System.out.println("fks " + n); }
      c.setAutoCommit(false);
      try (PreparedStatement p = c.prepareStatement("select range as n, 'x' || range as s from range(?)")) {
        p.setFetchSize(100); p.setInt(1, 1000);
        long sum = 0; int rows = 0;
        for (int k = 0; k < 6; k++) { try (ResultSet r = p.executeQuery()) { while (r.next()) { sum += r.getLong(1); rows++; } } }
        System.out.println("fetched " + rows + " sum " + sum);
      }
      try (PreparedStatement p = c.prepareStatement("select ?::timestamptz, ?::numeric, ?::boolean, ?::date")) {
        p.setTimestamp(1, Timestamp.valueOf("2024-03-01 12:00:00")); p.setBigDecimal(2, new java.math.BigDecimal("12.345")); p.setBoolean(3, true); p.setDate(4, Date.valueOf("2024-03-01"));
        try (ResultSet r = p.executeQuery()) { r.next(); System.out.println("types " + r.getTimestamp(1).toInstant() + " " + r.getBigDecimal(2) + " " + r.getBoolean(3) + " " + r.getDate(4)); }
      }
      c.commit();
    }
  }
}
